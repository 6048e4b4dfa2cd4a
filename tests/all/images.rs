//! Images (issue 29) through the real TUI in a pseudo-terminal: `@shot.png` in a
//! message reaches the model as an image content part (OpenAI `image_url` with a
//! `data:` URL) beside the text, and the thread shows the attachment, not its bytes.

use crate::support;

use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;
use support::*;

#[cfg(unix)]
#[test]
fn an_at_mentioned_png_reaches_the_model_as_an_image_part() {
    let env = TestEnv::new();
    let server = ScriptedServer::sequence(vec![Reply::Sse(sse_text("a red square"))]);
    env.use_openai(&server.base_url, "sk-test");
    let png = env.project.join("shot.png");
    image::RgbImage::from_pixel(4, 4, image::Rgb([255, 0, 0]))
        .save(&png)
        .unwrap();
    let bytes = std::fs::read(&png).unwrap();

    let tui = env.tui();
    tui.send(b"what is in @shot.png");
    std::thread::sleep(Duration::from_millis(300));
    tui.send(b"\r");
    assert!(
        tui.wait_text("a red square", Duration::from_secs(30))
            .is_some(),
        "{}",
        tui.screen()
    );
    let screen = tui.screen();
    assert!(screen.contains("attached shot.png"), "{screen}");
    assert!(!screen.contains("base64"), "{screen}");
    drop(tui);

    let request = &server.requests()[0];
    let user = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "user")
        .unwrap();
    let parts = user["content"].as_array().expect("content parts");
    let image = parts
        .iter()
        .find(|p| p["type"] == "image_url")
        .expect("an image part");
    let expected = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&bytes)
    );
    assert_eq!(image["image_url"]["url"], Value::String(expected));
    let text: String = parts
        .iter()
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert!(text.contains("what is in @shot.png"), "{text}");
    assert!(!text.contains("arbor-image"), "{text}");
    // The image is labelled with its file, and no empty `<context_file>` goes along.
    assert!(!text.contains("context_file"), "{text}");
    assert!(
        text.contains("<context_image paths=\"@shot.png → "),
        "{text}"
    );
}
