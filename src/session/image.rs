//! Images inside a user message's text (issue 29): an attached picture travels in the
//! transcript as one marker, `<arbor-image media_type="image/png">BASE64</arbor-image>`,
//! which the provider clients turn into the API's image part (OpenAI `image_url` with
//! a `data:` URL, Anthropic `image` with a base64 `source`). Keeping it in the text keeps
//! the transcript format (a user message's `content` is one string) and survives a
//! resume.
//!
//! Owns: the marker ([`marker`]), splitting a text into text and image parts
//! ([`parts`]), the models known to take none ([`lacks_vision`], which get a note
//! instead: [`without_images`]), and preparing an image file ([`encode_file`]: the `image` crate reads
//! it and, when it is larger than [`MAX_SIDE`] pixels on a side or [`MAX_BYTES`]
//! bytes, scales it down and re-encodes it as PNG). Does not own: which files are
//! attached (front ends) or the wire forms (`provider`).

use std::path::Path;

use base64::Engine as _;

/// Longest side an attached image keeps, in pixels (larger ones are scaled down).
pub const MAX_SIDE: u32 = 1568;
/// Bytes an attached image file may have before it is re-encoded smaller: 3.75 MB
/// (Anthropic's per-image cap is 5 MB of base64).
pub const MAX_BYTES: usize = 3_750_000;
/// Bytes of an image file read at most.
const MAX_FILE: u64 = 50 << 20;

const OPEN: &str = "<arbor-image media_type=\"";
const CLOSE: &str = "</arbor-image>";

/// One piece of a user message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part<'a> {
    /// Plain text.
    Text(&'a str),
    /// An image: its media type (`image/png`) and base64 bytes.
    Image { media_type: &'a str, data: &'a str },
}

/// Whether `text` holds an image marker.
pub fn has_images(text: &str) -> bool {
    text.contains(OPEN)
}

/// `text` split into text and image parts, in order; empty text parts are left out.
/// A malformed marker stays text.
pub fn parts(text: &str) -> Vec<Part<'_>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let Some((media_type, tail)) = after.split_once("\">") else {
            break;
        };
        let Some(end) = tail.find(CLOSE) else {
            break;
        };
        if !rest[..start].is_empty() {
            out.push(Part::Text(&rest[..start]));
        }
        out.push(Part::Image {
            media_type,
            data: tail[..end].trim(),
        });
        rest = &tail[end + CLOSE.len()..];
    }
    if !rest.is_empty() {
        out.push(Part::Text(rest));
    }
    out
}

/// Whether `model` is known to take no images (so an image part would fail the
/// request): OpenAI's `gpt-3.5*`, `o1-mini`, `o3-mini`, DeepSeek's models, and
/// coder-only local models (`*coder*`, `codestral*`). Any other model gets the image.
pub fn lacks_vision(model: &str) -> bool {
    let m = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    m.starts_with("gpt-3.5")
        || m.starts_with("o1-mini")
        || m.starts_with("o3-mini")
        || m.starts_with("deepseek")
        || m.contains("coder")
        || m.starts_with("codestral")
}

/// `text` with each image marker shown as `📎 image (image/png, 12 KB)` instead of its
/// base64 (an export, a printout).
pub fn shown(text: &str) -> String {
    parts(text)
        .into_iter()
        .map(|part| match part {
            Part::Text(t) => t.to_string(),
            Part::Image { media_type, data } => {
                let kb = (data.len() * 3 / 4).div_ceil(1024);
                format!("📎 image ({media_type}, {kb} KB)")
            }
        })
        .collect()
}

/// `text` with each image marker replaced by a note that `model` takes no images
/// (`[an image/png image was attached but not sent: gpt-3.5-turbo does not accept
/// images]`), for models that [`lacks_vision`].
pub fn without_images(text: &str, model: &str) -> String {
    parts(text)
        .into_iter()
        .map(|part| match part {
            Part::Text(t) => t.to_string(),
            Part::Image { media_type, .. } => format!(
                "[an {media_type} image was attached but not sent: {model} does not accept images]"
            ),
        })
        .collect()
}

/// The marker of an image with `media_type` and base64 `data`.
pub fn marker(media_type: &str, data: &str) -> String {
    format!("{OPEN}{media_type}\">{data}{CLOSE}")
}

/// Why an image file cannot be attached.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("cannot read it: {0}")]
    Read(#[from] std::io::Error),
    #[error("not an image arbor can read: {0}")]
    Decode(String),
}

/// The media type of an image file by extension (`png`, `jpg`/`jpeg`, `gif`, `webp`),
/// `None` for any other file.
pub fn media_type_of(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

/// The marker for the image file at `path` (of [`media_type_of`] `media_type`): as is
/// when it is at most [`MAX_SIDE`] on a side and [`MAX_BYTES`], else scaled down to fit
/// and re-encoded as PNG. Also returns a note when it was scaled (`1568×882 from
/// 3840×2160`).
///
/// Errors: the file cannot be read, or is not an image of its kind.
pub fn encode_file(path: &Path, media_type: &str) -> Result<(String, Option<String>), ImageError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_FILE)
        .read_to_end(&mut bytes)?;
    encode_bytes(&bytes, media_type)
}

/// The marker for an image given as `bytes` (of `media_type`), scaled down as
/// [`encode_file`] does; for images that arrive as data (an ACP prompt's image block).
///
/// Errors: the bytes are not an image arbor can read.
pub fn encode_bytes(
    bytes: &[u8],
    media_type: &str,
) -> Result<(String, Option<String>), ImageError> {
    let img = image::load_from_memory(bytes).map_err(|e| ImageError::Decode(e.to_string()))?;
    let (w, h) = (img.width(), img.height());
    if w <= MAX_SIDE && h <= MAX_SIDE && bytes.len() <= MAX_BYTES {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        return Ok((marker(media_type, &data), None));
    }
    let small = img.resize(MAX_SIDE, MAX_SIDE, image::imageops::FilterType::Triangle);
    let mut out = std::io::Cursor::new(Vec::new());
    small
        .write_to(&mut out, image::ImageFormat::Png)
        .map_err(|e| ImageError::Decode(e.to_string()))?;
    let data = base64::engine::general_purpose::STANDARD.encode(out.get_ref());
    let note = format!("{}×{} from {w}×{h}", small.width(), small.height());
    Ok((marker("image/png", &data), Some(note)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_split_out_of_text() {
        let text = format!(
            "look {} and {}done",
            marker("image/png", "QUJD"),
            marker("image/jpeg", "REVG")
        );
        assert_eq!(
            parts(&text),
            [
                Part::Text("look "),
                Part::Image {
                    media_type: "image/png",
                    data: "QUJD"
                },
                Part::Text(" and "),
                Part::Image {
                    media_type: "image/jpeg",
                    data: "REVG"
                },
                Part::Text("done"),
            ]
        );
        assert_eq!(parts("plain"), [Part::Text("plain")]);
        assert!(lacks_vision("gpt-3.5-turbo") && lacks_vision("qwen2.5-coder-0.5b"));
        assert!(!lacks_vision("gpt-4o") && !lacks_vision("claude-sonnet-4-5"));
        assert_eq!(
            without_images(
                &format!("a{}", marker("image/png", "QUJD")),
                "gpt-3.5-turbo"
            ),
            "a[an image/png image was attached but not sent: gpt-3.5-turbo does not accept images]"
        );
        assert!(!has_images("plain"));
    }

    #[test]
    fn large_images_are_scaled_down() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.png");
        image::RgbImage::new(3000, 1000).save(&path).unwrap();
        let (m, note) = encode_file(&path, "image/png").unwrap();
        assert_eq!(note.as_deref(), Some("1568×523 from 3000×1000"));
        let Part::Image { data, .. } = parts(&m)[0] else {
            panic!()
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        let img = image::load_from_memory(&bytes).unwrap();
        assert_eq!((img.width(), img.height()), (1568, 523));
        let small = dir.path().join("small.png");
        image::RgbImage::new(10, 10).save(&small).unwrap();
        assert_eq!(encode_file(&small, "image/png").unwrap().1, None);
        std::fs::write(dir.path().join("bad.png"), "not a png").unwrap();
        assert!(encode_file(&dir.path().join("bad.png"), "image/png").is_err());
    }
}
