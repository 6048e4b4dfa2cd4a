//! A user text holding image markers (`session::image`) as an API's list of content
//! parts, serialised straight from the text: text parts are `{"type":"text","text"}`
//! in both APIs, and each API says how an image is written ([`ImageForm`]). The base64
//! data is written from the transcript's own string, never copied into a JSON value
//! (an attached image is sent again with every request of the session).
//!
//! Owns: walking the parts. Does not own: the marker (`session::image`) or the rest of
//! a request body (`openai::body`, `anthropic::body`).

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::session::image::{Part, parts};

/// How an API writes one image part.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ImageForm {
    /// Chat Completions: `{"type":"image_url","image_url":{"url":"data:<media type>;base64,<data>"}}`.
    DataUrl,
    /// Anthropic Messages: `{"type":"image","source":{"type":"base64","media_type","data"}}`.
    Base64Source,
}

/// `text`'s parts in `form` (serialises as a JSON array).
pub(crate) struct ContentParts<'a> {
    pub text: &'a str,
    pub form: ImageForm,
}

impl Serialize for ContentParts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for part in parts(self.text) {
            match part {
                Part::Text(text) => seq.serialize_element(&TextPart(text))?,
                Part::Image { media_type, data } => seq.serialize_element(&ImagePart {
                    media_type,
                    data,
                    form: self.form,
                })?,
            }
        }
        seq.end()
    }
}

struct TextPart<'a>(&'a str);

impl Serialize for TextPart<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("type", "text")?;
        map.serialize_entry("text", self.0)?;
        map.end()
    }
}

struct ImagePart<'a> {
    media_type: &'a str,
    data: &'a str,
    form: ImageForm,
}

/// `data:<media type>;base64,<data>`, written without building the string.
struct DataUrl<'a>(&'a str, &'a str);

impl Serialize for DataUrl<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("data:{};base64,{}", self.0, self.1))
    }
}

/// One-key map `{key: value}`.
struct One<'a, V>(&'a str, V);

impl<V: Serialize> Serialize for One<'_, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(self.0, &self.1)?;
        map.end()
    }
}

struct Base64Source<'a>(&'a str, &'a str);

impl Serialize for Base64Source<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("type", "base64")?;
        map.serialize_entry("media_type", self.0)?;
        map.serialize_entry("data", self.1)?;
        map.end()
    }
}

impl Serialize for ImagePart<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        match self.form {
            ImageForm::DataUrl => {
                map.serialize_entry("type", "image_url")?;
                map.serialize_entry(
                    "image_url",
                    &One("url", DataUrl(self.media_type, self.data)),
                )?;
            }
            ImageForm::Base64Source => {
                map.serialize_entry("type", "image")?;
                map.serialize_entry("source", &Base64Source(self.media_type, self.data))?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::image::marker;
    use serde_json::json;

    #[test]
    fn both_forms_write_text_and_images_in_order() {
        let text = format!("look {}done", marker("image/png", "QUJD"));
        let openai = serde_json::to_value(ContentParts {
            text: &text,
            form: ImageForm::DataUrl,
        })
        .unwrap();
        assert_eq!(
            openai,
            json!([
                {"type": "text", "text": "look "},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
                {"type": "text", "text": "done"},
            ])
        );
        let anthropic = serde_json::to_value(ContentParts {
            text: &text,
            form: ImageForm::Base64Source,
        })
        .unwrap();
        assert_eq!(
            anthropic,
            json!([
                {"type": "text", "text": "look "},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}},
                {"type": "text", "text": "done"},
            ])
        );
    }
}
