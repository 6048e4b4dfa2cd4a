//! An ACP prompt (content blocks) as the one arbor prompt text: text as is; a
//! resource link to a file of the session's directory (checked before it is read,
//! `attach`) and an embedded text resource
//! as `<context_file paths="@REL → ABS">…</context_file>` blocks before the text (the
//! form the TUI's `@file` attachments take); other links as their URI.
//!
//! Owns: that conversion. Does not own: running the prompt (`agent`).

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1::{ContentBlock, EmbeddedResourceResource};

use super::attach;
use super::transport::{RpcError, code};

/// A file URI's path (`file:///a/b` → `/a/b`, `%20` decoded); `None` for other URIs.
fn file_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    let mut out = Vec::with_capacity(rest.len());
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes.get(i), hex) {
            (Some(b'%'), Some(b)) => {
                out.push(b);
                i += 3;
            }
            (Some(b), _) => {
                out.push(*b);
                i += 1;
            }
            (None, _) => break,
        }
    }
    String::from_utf8(out).ok()
}

fn block(shown: &str, abs: &str, body: &str) -> String {
    format!("<context_file paths=\"@{shown} → {abs}\">\n{body}\n</context_file>")
}

/// The text of `prompt` for a session working in `cwd`; a linked file is attached
/// only as [`attach::read_link`] allows (`private`: `config::private::private_paths`),
/// else named with why it was not.
///
/// Errors: an image or audio block (`promptCapabilities` says neither is accepted),
/// as `invalid params`.
pub fn prompt_text(
    prompt: &[ContentBlock],
    cwd: &Path,
    private: &[PathBuf],
) -> Result<String, RpcError> {
    let mut attached = Vec::new();
    let mut text = Vec::new();
    for content in prompt {
        match content {
            ContentBlock::Text(t) => text.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => match file_path(&link.uri) {
                Some(path) => {
                    let abs = cwd.join(&path);
                    let shown = abs
                        .strip_prefix(cwd)
                        .map_or_else(|_| path.clone(), |p| p.display().to_string());
                    // Checked first, read after (issue 34): see `attach`.
                    match attach::read_link(Path::new(&path), cwd, private) {
                        Ok(body) => {
                            attached.push(block(&shown, &abs.display().to_string(), &body));
                        }
                        Err(why) => text.push(format!("@{shown} (not attached: {why})")),
                    }
                }
                None => text.push(link.uri.clone()),
            },
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => {
                    let path = file_path(&contents.uri).unwrap_or_else(|| contents.uri.clone());
                    let shown = Path::new(&path)
                        .strip_prefix(cwd)
                        .map_or_else(|_| path.clone(), |p| p.display().to_string());
                    attached.push(block(&shown, &path, &contents.text));
                }
                _ => text.push("(a binary resource was left out)".into()),
            },
            ContentBlock::Image(image) => text.push(image_marker(&image.data, &image.mime_type)?),
            ContentBlock::Audio(_) => {
                return Err(RpcError::new(
                    code::INVALID_PARAMS,
                    "arbor acp accepts text, images, resource links and embedded resources, not audio",
                ));
            }
            _ => {
                return Err(RpcError::new(
                    code::INVALID_PARAMS,
                    "unsupported prompt content",
                ));
            }
        }
    }
    attached.push(text.join("\n"));
    Ok(attached.join("\n\n"))
}

/// An image block (base64 `data` of `mime_type`) as arbor's image marker
/// (`session::image`), scaled down past its size caps; the provider sends it as an
/// image part, or a note for a model known to take none.
fn image_marker(data: &str, mime_type: &str) -> Result<String, RpcError> {
    use base64::Engine as _;
    let bad = |why: String| RpcError::new(code::INVALID_PARAMS, format!("image: {why}"));
    if !matches!(
        mime_type,
        "image/png" | "image/jpeg" | "image/gif" | "image/webp"
    ) {
        return Err(bad(format!(
            "{mime_type} is not one of image/png, image/jpeg, image/gif, image/webp"
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| bad(format!("data is not base64: {e}")))?;
    crate::session::image::encode_bytes(&bytes, mime_type)
        .map(|(marker, _)| marker)
        .map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn links_and_resources_become_attachments_before_the_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a b.txt"), "alpha").unwrap();
        let uri = format!("file://{}/a%20b.txt", dir.path().display());
        let prompt: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "text", "text": "explain"},
            {"type": "resource_link", "uri": uri, "name": "a b.txt"},
            {"type": "resource", "resource": {"uri": "file:///x/y.rs", "text": "fn y() {}"}},
        ]))
        .unwrap();
        let text = prompt_text(&prompt, dir.path(), &[]).unwrap();
        assert!(
            text.starts_with("<context_file paths=\"@a b.txt → "),
            "{text}"
        );
        assert!(text.contains("alpha\n</context_file>"), "{text}");
        assert!(text.contains("fn y() {}"), "{text}");
        assert!(text.ends_with("explain"), "{text}");
        let image: Vec<ContentBlock> =
            serde_json::from_value(json!([{"type": "image", "data": "", "mimeType": "image/png"}]))
                .unwrap();
        assert!(
            prompt_text(&image, dir.path(), &[]).is_err(),
            "empty data is no image"
        );
    }

    #[test]
    fn an_image_block_becomes_an_image_part_of_the_prompt() {
        use base64::Engine as _;
        let mut png = std::io::Cursor::new(Vec::new());
        image::RgbImage::new(3, 2)
            .write_to(&mut png, image::ImageFormat::Png)
            .unwrap();
        let data = base64::engine::general_purpose::STANDARD.encode(png.get_ref());
        let prompt: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image", "data": data, "mimeType": "image/png"},
        ]))
        .unwrap();
        let text = prompt_text(&prompt, Path::new("/"), &[]).unwrap();
        let parts = crate::session::image::parts(&text);
        assert!(
            parts.iter().any(|p| matches!(
                p,
                crate::session::image::Part::Image { media_type: "image/png", data: d } if *d == data
            )),
            "{parts:?}"
        );
        let svg: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "image", "data": data, "mimeType": "image/svg+xml"},
        ]))
        .unwrap();
        let err = prompt_text(&svg, Path::new("/"), &[]).unwrap_err();
        assert!(format!("{err:?}").contains("image/svg+xml"), "{err:?}");
    }
}
