//! Bodies too large for one NATS message (issue 27): a transcript, a patch.
//!
//! Owns: [`Payload`] — a value carried inline, or stored in the object store
//! [`PAYLOADS_BUCKET`](super::wire::PAYLOADS_BUCKET) and named — and the size limit
//! between the two ([`INLINE_MAX`]). Does not own: the messages that carry payloads
//! (`wire`), the connection (`nats`).

use async_nats::jetstream::object_store::ObjectStore;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use tokio::io::AsyncReadExt;

use super::RemoteError;

/// The largest JSON body, in bytes, carried inside a message (256 KiB); larger ones go
/// to the object store. Far below the server's `max_payload` (the script raises it to
/// 8 MB), so a message with a few inline fields still fits.
pub const INLINE_MAX: usize = 256 * 1024;

/// A value in a message, or the name of the object holding its JSON:
/// `{"inline": …}` or `{"object": {"name": "…", "size": 123}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Payload<T> {
    /// The value itself.
    Inline(T),
    /// The value's JSON in the object store under `name`, `size` bytes long.
    Object { name: String, size: u64 },
}

impl<T: Serialize + DeserializeOwned> Payload<T> {
    /// `value` inline when its JSON is at most [`INLINE_MAX`] bytes, else put in
    /// `store` under `name` (replacing an object of that name).
    ///
    /// Errors: [`RemoteError::Json`] when `value` does not serialize,
    /// [`RemoteError::Nats`] when the object store refuses it.
    pub async fn pack(store: &ObjectStore, name: &str, value: T) -> Result<Self, RemoteError> {
        let json = serde_json::to_vec(&value)?;
        if json.len() <= INLINE_MAX {
            return Ok(Payload::Inline(value));
        }
        let size = json.len() as u64;
        let mut reader = json.as_slice();
        store
            .put(name, &mut reader)
            .await
            .map_err(|e| RemoteError::nats(format!("cannot store payload {name}"), e))?;
        Ok(Payload::Object {
            name: name.to_string(),
            size,
        })
    }

    /// The value: inline, or read back from `store`.
    ///
    /// Errors: [`RemoteError::Nats`] when the object is missing or unreadable,
    /// [`RemoteError::Json`] when its content is not the expected JSON.
    pub async fn unpack(self, store: &ObjectStore) -> Result<T, RemoteError> {
        match self {
            Payload::Inline(value) => Ok(value),
            Payload::Object { name, .. } => {
                let mut object = store
                    .get(&name)
                    .await
                    .map_err(|e| RemoteError::nats(format!("cannot fetch payload {name}"), e))?;
                let mut json = Vec::new();
                object
                    .read_to_end(&mut json)
                    .await
                    .map_err(|e| RemoteError::nats(format!("cannot read payload {name}"), e))?;
                Ok(serde_json::from_slice(&json)?)
            }
        }
    }

    /// Whether the value is carried inline.
    pub fn is_inline(&self) -> bool {
        matches!(self, Payload::Inline(_))
    }
}
