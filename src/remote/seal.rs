//! Binding what a worker sends to the worker that holds the session's lease (issue 34
//! item 7, "the wire"): a key pair per run, its public half in the lease record, a
//! signature on every message and sync request.
//!
//! Owns: [`Signer`] (an Ed25519 key pair made for one run, `ring`), what is signed —
//! a domain tag, the session, the epoch, the message's sequence number and the SHA-256
//! of its body ([`message_bytes`]), or of the reply subject of a sync request —, the
//! headers that carry it ([`SEQ_HEADER`], [`SIG_HEADER`], [`headers`]), checking them
//! ([`verify_message`], [`verify_sync`]) and the signed sync request itself
//! ([`request_sync`]). Does not own: which key the root trusts (the root pins the
//! lease holder's, `remote::pin`), the lease record (`lease`).
//!
//! Why a signature and not a secret: anyone subscribed on the bus reads the job, the
//! lease and every message, so nothing secret can travel in clear; a public key can.
//! Residual trust: a peer allowed to write the leases bucket or the streams can still
//! deny service (bump the epoch, so the holder stops; delete the job), and one that
//! takes a new job's lease before any worker does is its worker, as any worker of the
//! pool would be; it cannot forge a message of a run another worker holds.

use std::time::Duration;

use async_nats::HeaderMap;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use futures::StreamExt;
use ring::rand::SystemRandom;
use ring::signature::{ED25519, Ed25519KeyPair, KeyPair, UnparsedPublicKey};
use sha2::{Digest, Sha256};

use super::RemoteError;
use super::wire::{EPOCH_HEADER, WORKER_HEADER};

/// The header of a worker message naming its sequence number in the run (decimal,
/// from 0, one more per message): the root applies each once, in order.
pub const SEQ_HEADER: &str = "Arbor-Seq";
/// The header carrying the signature (standard base64 of 64 bytes) of a worker message
/// or a sync request.
pub const SIG_HEADER: &str = "Arbor-Sig";

/// Why a signature does not check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// The lease holds no usable public key (a worker of an older arbor, or garbage).
    #[error("the lease holds no valid public key")]
    BadKey,
    /// A header the check needs is missing or malformed (`0` names it).
    #[error("no valid {0} header")]
    Header(&'static str),
    /// The signature is not the key holder's over these bytes.
    #[error("the signature does not verify against the lease holder's key")]
    BadSignature,
    /// The key pair could not be made (the system's random source failed).
    #[error("cannot make a key pair: {0}")]
    KeyPair(String),
}

/// An Ed25519 key pair made for one run of one session; its public key goes into the
/// lease the worker takes, and every message of the run is signed with it.
pub struct Signer {
    pair: Ed25519KeyPair,
    public: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("public", &self.public)
            .finish()
    }
}

impl Signer {
    /// A fresh key pair from the system's random source.
    ///
    /// Errors: [`SealError::KeyPair`] when the random source or key generation fails.
    pub fn generate() -> Result<Self, SealError> {
        let rng = SystemRandom::new();
        let pkcs8 =
            Ed25519KeyPair::generate_pkcs8(&rng).map_err(|e| SealError::KeyPair(e.to_string()))?;
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref())
            .map_err(|e| SealError::KeyPair(e.to_string()))?;
        let public = STANDARD.encode(pair.public_key().as_ref());
        Ok(Self { pair, public })
    }

    /// The public key, standard base64 of its 32 bytes (what the lease records).
    pub fn public_key(&self) -> &str {
        &self.public
    }

    /// The signature (base64) of message `seq` of `session` under `epoch` with `body`.
    pub fn sign_message(&self, session: &str, epoch: u64, seq: u64, body: &[u8]) -> String {
        let bytes = message_bytes("out", session, epoch, seq, body);
        STANDARD.encode(self.pair.sign(&bytes).as_ref())
    }

    /// The signature (base64) of a sync request of `session` under `epoch` whose
    /// answer goes to `reply`.
    pub fn sign_sync(&self, session: &str, epoch: u64, reply: &str) -> String {
        let bytes = message_bytes("sync", session, epoch, 0, reply.as_bytes());
        STANDARD.encode(self.pair.sign(&bytes).as_ref())
    }
}

/// The bytes signed: `arbor-wire-1`, the domain (`out` or `sync`), the session, each
/// NUL-terminated, then the epoch and the sequence number (8 bytes big-endian each)
/// and the SHA-256 of `body`. The domain keeps a sync signature from passing as a
/// message's; the session and epoch keep one from being replayed into another run.
pub fn message_bytes(domain: &str, session: &str, epoch: u64, seq: u64, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(96 + session.len());
    for part in ["arbor-wire-1", domain, session] {
        out.extend_from_slice(part.as_bytes());
        out.push(0);
    }
    out.extend_from_slice(&epoch.to_be_bytes());
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&Sha256::digest(body));
    out
}

/// The headers of message `seq` of `session` under `epoch` sent by `worker` with
/// `body`: [`EPOCH_HEADER`], [`WORKER_HEADER`], [`SEQ_HEADER`] and [`SIG_HEADER`].
pub fn headers(
    signer: &Signer,
    (session, epoch, seq): (&str, u64, u64),
    worker: &str,
    body: &[u8],
) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(EPOCH_HEADER, epoch.to_string().as_str());
    headers.insert(WORKER_HEADER, worker);
    headers.insert(SEQ_HEADER, seq.to_string().as_str());
    headers.insert(
        SIG_HEADER,
        signer.sign_message(session, epoch, seq, body).as_str(),
    );
    headers
}

/// A public key as the lease records it, ready to check signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey(Vec<u8>);

impl PublicKey {
    /// Parses the lease's `key` (base64 of 32 bytes).
    ///
    /// Errors: [`SealError::BadKey`] for anything else (an empty key included).
    pub fn parse(key: &str) -> Result<Self, SealError> {
        let bytes = STANDARD.decode(key).map_err(|_| SealError::BadKey)?;
        if bytes.len() != 32 {
            return Err(SealError::BadKey);
        }
        Ok(Self(bytes))
    }

    fn verify(&self, bytes: &[u8], signature: &str) -> Result<(), SealError> {
        let signature = STANDARD
            .decode(signature.trim())
            .map_err(|_| SealError::Header(SIG_HEADER))?;
        UnparsedPublicKey::new(&ED25519, &self.0)
            .verify(bytes, &signature)
            .map_err(|_| SealError::BadSignature)
    }
}

/// Checks message `seq` of `session` under `epoch` with `body` against `key`.
///
/// Errors: [`SealError::Header`] for a signature that is not base64,
/// [`SealError::BadSignature`] when it is not `key`'s over these bytes.
pub fn verify_message(
    key: &PublicKey,
    (session, epoch, seq): (&str, u64, u64),
    body: &[u8],
    signature: &str,
) -> Result<(), SealError> {
    key.verify(&message_bytes("out", session, epoch, seq, body), signature)
}

/// Checks a sync request of `session` under `epoch` answered on `reply` against `key`.
///
/// Errors: as [`verify_message`].
pub fn verify_sync(
    key: &PublicKey,
    (session, epoch): (&str, u64),
    reply: &str,
    signature: &str,
) -> Result<(), SealError> {
    key.verify(
        &message_bytes("sync", session, epoch, 0, reply.as_bytes()),
        signature,
    )
}

/// Asks on `subject` (`arbor.sync.<session>`) for the session as the root stores it,
/// signed as the holder of `epoch`: the request names a fresh inbox as its reply
/// subject and signs it, so only the holder's request is answered and a recorded one
/// replayed by someone else answers only that same inbox. Waits at most `timeout`.
///
/// Errors: [`RemoteError::Nats`] when the request cannot be sent or no answer comes
/// within `timeout`.
pub async fn request_sync(
    client: &async_nats::Client,
    subject: String,
    (session, epoch): (&str, u64),
    signer: &Signer,
    timeout: Duration,
) -> Result<async_nats::Message, RemoteError> {
    let inbox = client.new_inbox();
    let mut answers = client
        .subscribe(inbox.clone())
        .await
        .map_err(|e| RemoteError::nats("cannot subscribe to the sync answer", e))?;
    let mut headers = HeaderMap::new();
    headers.insert(EPOCH_HEADER, epoch.to_string().as_str());
    headers.insert(
        SIG_HEADER,
        signer.sign_sync(session, epoch, &inbox).as_str(),
    );
    client
        .publish_with_reply_and_headers(subject.clone(), inbox, headers, Default::default())
        .await
        .map_err(|e| RemoteError::nats(format!("cannot ask on {subject}"), e))?;
    match tokio::time::timeout(timeout, answers.next()).await {
        Ok(Some(answer)) => Ok(answer),
        Ok(None) => Err(RemoteError::nats(
            format!("no answer on {subject}"),
            "the subscription ended",
        )),
        Err(_) => Err(RemoteError::nats(
            format!("no answer on {subject}"),
            format!("none within {} s", timeout.as_secs()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_binds_the_session_epoch_sequence_and_body() {
        let signer = Signer::generate().unwrap();
        let key = PublicKey::parse(signer.public_key()).unwrap();
        let sig = signer.sign_message("s", 2, 5, b"body");
        assert_eq!(verify_message(&key, ("s", 2, 5), b"body", &sig), Ok(()));
        for (at, body) in [
            (("t", 2, 5), &b"body"[..]),
            (("s", 3, 5), b"body"),
            (("s", 2, 6), b"body"),
            (("s", 2, 5), b"bodY"),
        ] {
            assert_eq!(
                verify_message(&key, at, body, &sig),
                Err(SealError::BadSignature),
                "{at:?}"
            );
        }
        let other = Signer::generate().unwrap();
        let other_key = PublicKey::parse(other.public_key()).unwrap();
        assert_eq!(
            verify_message(&other_key, ("s", 2, 5), b"body", &sig),
            Err(SealError::BadSignature)
        );
        assert_eq!(
            verify_message(&key, ("s", 2, 5), b"body", "not base64!"),
            Err(SealError::Header(SIG_HEADER))
        );
    }

    #[test]
    fn a_sync_signature_is_bound_to_its_reply_and_is_no_message_signature() {
        let signer = Signer::generate().unwrap();
        let key = PublicKey::parse(signer.public_key()).unwrap();
        let sig = signer.sign_sync("s", 1, "_INBOX.a");
        assert_eq!(verify_sync(&key, ("s", 1), "_INBOX.a", &sig), Ok(()));
        assert!(verify_sync(&key, ("s", 1), "_INBOX.b", &sig).is_err());
        assert!(verify_message(&key, ("s", 1, 0), b"_INBOX.a", &sig).is_err());
    }

    #[test]
    fn only_a_32_byte_base64_key_parses() {
        assert_eq!(PublicKey::parse(""), Err(SealError::BadKey));
        assert_eq!(PublicKey::parse("AAAA"), Err(SealError::BadKey));
        assert!(PublicKey::parse(&STANDARD.encode([7u8; 32])).is_ok());
    }
}
