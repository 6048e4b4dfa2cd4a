//! Bodies too large for one NATS message (issue 27): a transcript, a patch.
//!
//! Owns: [`Payload`] — a value carried inline, or stored in the object store
//! [`PAYLOADS_BUCKET`](super::wire::PAYLOADS_BUCKET) and named — the size limit
//! between the two ([`INLINE_MAX`]), and reading an object back within bounds
//! ([`read_bounded`]: its declared size and [`OBJECT_MAX`]; issue 34 item 7, before
//! which an object was read whole whatever its size). Does not own: the messages
//! that carry payloads (`wire`), the connection (`nats`).

use async_nats::jetstream::object_store::{Object, ObjectStore};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use tokio::io::AsyncReadExt;

use super::RemoteError;

/// The largest JSON body, in bytes, carried inside a message (256 KiB); larger ones go
/// to the object store. Far below the server's `max_payload` (the script raises it to
/// 8 MB), so a message with a few inline fields still fits.
pub const INLINE_MAX: usize = 256 * 1024;

/// The largest payload object arbor reads, in bytes (256 MiB): a declared size above
/// it is refused before anything is fetched. A transcript or patch this large is far
/// past any model's context; the bound keeps a forged message from making a root or a
/// worker read without end.
pub const OBJECT_MAX: u64 = 256 * 1024 * 1024;

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

    /// The value: inline, or read back from `store` — at most its declared `size`
    /// bytes (see [`read_bounded`]).
    ///
    /// Errors: [`RemoteError::Nats`] when the object is missing or unreadable,
    /// [`RemoteError::Payload`] when it is larger than declared or the declared size
    /// is over [`OBJECT_MAX`], [`RemoteError::Json`] when its content is not the
    /// expected JSON.
    pub async fn unpack(self, store: &ObjectStore) -> Result<T, RemoteError> {
        match self {
            Payload::Inline(value) => Ok(value),
            Payload::Object { name, size } => {
                let json = read_bounded(store, &name, size).await?;
                Ok(serde_json::from_slice(&json)?)
            }
        }
    }

    /// Whether the value is carried inline.
    pub fn is_inline(&self) -> bool {
        matches!(self, Payload::Inline(_))
    }
}

/// The bytes of object `name` in `store`, read only while they stay within `limit`
/// bytes (a payload's declared size, or [`OBJECT_MAX`] where nothing is declared):
/// the object's own size is checked before reading, and the read stops one byte past
/// `limit`, so a lying object header cannot make it read more.
///
/// Errors: [`RemoteError::Payload`] when `limit` is over [`OBJECT_MAX`] or the object
/// is larger than `limit` ("payload <name> is larger than its declared <n> bytes");
/// [`RemoteError::Nats`] when it is missing or unreadable.
pub async fn read_bounded(
    store: &ObjectStore,
    name: &str,
    limit: u64,
) -> Result<Vec<u8>, RemoteError> {
    let refuse = |problem: String| RemoteError::Payload {
        name: name.to_string(),
        problem,
    };
    if limit > OBJECT_MAX {
        return Err(refuse(format!(
            "declares {limit} bytes, over the {OBJECT_MAX}-byte limit"
        )));
    }
    let object = store
        .get(name)
        .await
        .map_err(|e| RemoteError::nats(format!("cannot fetch payload {name}"), e))?;
    read_within(object, name, limit).await
}

/// [`read_bounded`] of an object already fetched (`name` is named in errors): the
/// caller tells a missing object apart itself.
///
/// Errors: as [`read_bounded`], after the fetch.
pub async fn read_within(object: Object, name: &str, limit: u64) -> Result<Vec<u8>, RemoteError> {
    let larger = || RemoteError::Payload {
        name: name.to_string(),
        problem: if limit > OBJECT_MAX {
            format!("declares {limit} bytes, over the {OBJECT_MAX}-byte limit")
        } else {
            format!("is larger than its declared {limit} bytes")
        },
    };
    if limit > OBJECT_MAX || u64::try_from(object.info().size).unwrap_or(u64::MAX) > limit {
        return Err(larger());
    }
    let mut bytes = Vec::new();
    object
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| RemoteError::nats(format!("cannot read payload {name}"), e))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limit {
        return Err(larger());
    }
    Ok(bytes)
}
