//! One MCP tool as an arbor [`Tool`]: named `mcp__<server>__<tool>`, offered with the
//! server's description and input schema; its results turned into the text the model
//! gets back.
//!
//! Results: text blocks verbatim (joined by newlines); structured content as JSON when
//! no text block came with it; images, audio and resources as a short placeholder
//! naming type and size (`[image: image/png, 1.2 KB]`) — the model gets no base64.
//! A result with `isError` is a tool error. The text is capped as `bash` caps a stream
//! (`bash::output::Capped`: the first 20 KB and the last 30 KB kept, the cut stated),
//! so a server answering megabytes does not flood the transcript or the model.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, Tool as ToolDef};
use serde_json::{Value, json};

use super::server::{CallEnd, Server};
use crate::config::mcp::MCP_MODULE;
use crate::tool::bash::output::Capped;
use crate::tool::{Tool, ToolContext, ToolOutput, ToolSpec};

/// The prefix of every MCP tool name (the tool table's convention).
pub const PREFIX: &str = crate::config::modules::MCP_TOOL_PREFIX;

/// `mcp__<server>__<tool>`, with characters providers refuse in tool names
/// (anything but letters, digits, `_` and `-`) replaced by `_`.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("{PREFIX}{}__{}", clean(server), clean(tool))
}

/// The server part of an MCP tool name (`mcp__github__search` → `github`), for tool
/// cards and approval prompts; `None` for other tools.
pub fn server_of(tool_name: &str) -> Option<(&str, &str)> {
    crate::config::modules::mcp_server_of(tool_name)
}

/// One tool of one server.
pub struct McpTool {
    server: Arc<Server>,
    def: ToolDef,
    name: String,
}

impl McpTool {
    pub(super) fn new(server: Arc<Server>, def: ToolDef) -> Self {
        let name = tool_name(&server.spec.name, &def.name);
        Self { server, def, name }
    }
}

impl Tool for McpTool {
    fn module(&self) -> &str {
        MCP_MODULE
    }

    fn spec(&self) -> ToolSpec {
        let mut schema = Value::Object((*self.def.input_schema).clone());
        if schema.get("type").is_none() {
            schema["type"] = json!("object");
        }
        let about = self
            .def
            .description
            .as_deref()
            .or(self.def.title.as_deref())
            .unwrap_or("");
        ToolSpec {
            name: self.name.clone(),
            description: format!("{about} (MCP server '{}')", self.server.spec.name)
                .trim_start()
                .to_string(),
            input_schema: schema,
        }
    }

    fn call(&self, input: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let server = self.server.clone();
        let tool = self.def.name.to_string();
        Box::pin(async move {
            let (end, restarted) = server.call(&tool, input, &ctx.cancel).await;
            let mut output = match end {
                CallEnd::Done(result) => output_of(&result),
                CallEnd::Failed(reason) => ToolOutput::error(reason),
                CallEnd::Cancelled => ToolOutput::error(format!(
                    "Cancelled: the call to '{tool}' on MCP server '{}' was stopped.",
                    server.spec.name
                )),
            };
            if restarted {
                output.content = format!(
                    "(MCP server '{}' had exited and was restarted for this call.)\n{}",
                    server.spec.name, output.content
                );
            }
            output
        })
    }
}

/// The text the model gets for `result`: text blocks (cut to `bash`'s limits), a
/// placeholder for other content, and each PNG/JPEG/GIF/WebP image block as an
/// image (`session::image` marker, scaled down past its caps) that the provider
/// sends as an image part (MCP `CallToolResult` content, spec 2025-06-18).
pub fn output_of(result: &CallToolResult) -> ToolOutput {
    let mut parts = Vec::new();
    let mut images = String::new();
    let mut has_text = false;
    for block in &result.content {
        let block = serde_json::to_value(block).unwrap_or(Value::Null);
        if let Some(text) = block.get("text").and_then(Value::as_str)
            && block["type"] == "text"
        {
            has_text = true;
            parts.push(text.to_string());
        } else if let Some(marker) = image_marker(&block) {
            images.push_str(&marker);
        } else {
            parts.push(placeholder(&block));
        }
    }
    if !has_text && let Some(structured) = &result.structured_content {
        parts.insert(0, structured.to_string());
    }
    let content = cap(parts.join("\n")) + &images;
    if result.is_error == Some(true) {
        ToolOutput::error(content)
    } else {
        ToolOutput::ok(content)
    }
}

/// An MCP `image` block as an image marker, when it is PNG, JPEG, GIF or WebP and
/// its base64 `data` decodes to an image; `None` otherwise (it gets a placeholder).
fn image_marker(block: &Value) -> Option<String> {
    use base64::Engine as _;
    if block["type"] != "image" {
        return None;
    }
    let media_type = block["mimeType"].as_str()?;
    if !matches!(
        media_type,
        "image/png" | "image/jpeg" | "image/gif" | "image/webp"
    ) {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(block["data"].as_str()?)
        .ok()?;
    crate::session::image::encode_bytes(&bytes, media_type)
        .ok()
        .map(|(marker, _)| marker)
}

/// `text` cut to `bash`'s per-stream limits (head and tail kept, the cut stated).
fn cap(text: String) -> String {
    let mut capped = Capped::default();
    capped.push(text.as_bytes());
    if capped.was_cut() {
        capped.into_text()
    } else {
        text
    }
}

/// `[image: image/png, 1.2 KB]`, `[resource: file:///a.txt, text/plain, 120 B]`.
fn placeholder(block: &Value) -> String {
    let kind = block["type"].as_str().unwrap_or("content");
    let mime = |v: &Value| v["mimeType"].as_str().map(str::to_string);
    let b64_size = |v: &Value| v.as_str().map(|d| d.len() / 4 * 3);
    let (what, mime, size) = match kind {
        "image" | "audio" => (kind.to_string(), mime(block), b64_size(&block["data"])),
        "resource" => {
            let r = &block["resource"];
            let size = r["text"]
                .as_str()
                .map(str::len)
                .or_else(|| b64_size(&r["blob"]));
            (
                format!("resource: {}", r["uri"].as_str().unwrap_or("?")),
                mime(r),
                size,
            )
        }
        "resource_link" => (
            format!("resource link: {}", block["uri"].as_str().unwrap_or("?")),
            mime(block),
            block["size"].as_u64().map(|s| s as usize),
        ),
        other => (other.to_string(), None, None),
    };
    let mut text = format!("[{what}");
    if let Some(mime) = mime {
        text.push_str(&format!(", {mime}"));
    }
    if let Some(size) = size {
        text.push_str(&format!(", {}", human_size(size)));
    }
    text.push(']');
    text
}

fn human_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn names_are_prefixed_and_cleaned() {
        assert_eq!(tool_name("calc", "add"), "mcp__calc__add");
        assert_eq!(tool_name("my.srv", "get item"), "mcp__my_srv__get_item");
        assert_eq!(
            server_of("mcp__github__search_issues"),
            Some(("github", "search_issues"))
        );
        assert_eq!(server_of("bash"), None);
    }

    /// An image block that is a real PNG reaches the model as an image (a marker the
    /// providers turn into an image part); the text stays before it.
    #[test]
    fn an_image_result_is_an_image_for_the_model() {
        use base64::Engine as _;
        let mut png = std::io::Cursor::new(Vec::new());
        image::RgbImage::from_pixel(2, 2, image::Rgb([0, 0, 255]))
            .write_to(&mut png, image::ImageFormat::Png)
            .unwrap();
        let data = base64::engine::general_purpose::STANDARD.encode(png.get_ref());
        let out = output_of(&result(json!({"content": [
            {"type": "text", "text": "the chart"},
            {"type": "image", "data": data, "mimeType": "image/png"}
        ]})));
        let parts = crate::session::image::parts(&out.content);
        assert!(
            matches!(
                parts[..],
                [
                    crate::session::image::Part::Text("the chart"),
                    crate::session::image::Part::Image {
                        media_type: "image/png",
                        ..
                    }
                ]
            ),
            "{parts:?}"
        );
    }

    #[test]
    fn text_structured_media_and_errors() {
        let out = output_of(&result(json!({"content": [
            {"type": "text", "text": "5"},
            {"type": "image", "data": "A".repeat(4000), "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"}},
            {"type": "resource_link", "uri": "file:///b.bin", "name": "b", "size": 2048}
        ]})));
        assert!(!out.is_error);
        assert_eq!(
            out.content,
            "5\n[image, image/png, 2.9 KB]\n[resource: file:///a.txt, text/plain, 5 B]\n\
             [resource link: file:///b.bin, 2.0 KB]"
        );
        let out = output_of(&result(
            json!({"content": [], "structuredContent": {"sum": 5}}),
        ));
        assert_eq!(out.content, r#"{"sum":5}"#);
        let out = output_of(&result(
            json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
        ));
        assert!(out.is_error);
        assert_eq!(out.content, "boom");
    }

    #[test]
    fn a_huge_result_keeps_its_head_and_tail_and_says_what_was_cut() {
        use crate::tool::bash::output::{HEAD_BYTES, TAIL_BYTES};
        let text = format!("START{}END", "x".repeat(16_500_000));
        let out = output_of(&result(
            json!({"content": [{"type": "text", "text": text}]}),
        ));
        assert!(
            out.content.len() < HEAD_BYTES + TAIL_BYTES + 100,
            "{}",
            out.content.len()
        );
        assert!(out.content.starts_with("START"));
        assert!(out.content.ends_with("END"));
        let cut = text.len() - HEAD_BYTES - TAIL_BYTES;
        assert!(out.content.contains(&format!("… {cut} bytes cut …")));
    }
}
