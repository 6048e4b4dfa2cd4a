//! The NATS credential forms besides user and password (issue 38 item 1): a token (in
//! the URL and as `NATS_TOKEN`) and an nkey seed file (`NATS_NKEY`), each against a
//! real server requiring it; a wrong token is refused with the token nowhere in the
//! error.

use arbor::remote::{Remote, RemoteAuth};

use crate::support::nats::NatsServer;

const TOKEN: &str = "tok-3f9a1c2b7d";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_connects_from_the_url_or_the_environment_and_a_wrong_one_is_not_repeated() {
    let Some(nats) =
        NatsServer::start_with(&format!("authorization {{\n  token: \"{TOKEN}\"\n}}\n"))
    else {
        return;
    };
    let in_url = format!("nats://{TOKEN}@127.0.0.1:{}", nats.port);
    let remote = Remote::connect(&in_url, "t", &RemoteAuth::default())
        .await
        .unwrap();
    remote.ensure().await.unwrap();
    assert_eq!(remote.url(), format!("nats://***@127.0.0.1:{}", nats.port));

    let env = |name: &str| (name == "NATS_TOKEN").then(|| TOKEN.to_string());
    let auth = RemoteAuth::from_env(&env);
    Remote::connect(&nats.url, "t", &auth).await.unwrap();

    let wrong = RemoteAuth {
        token: Some("tok-wrong-5e5e5e".into()),
        ..Default::default()
    };
    let e = Remote::connect(&nats.url, "t", &wrong)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("cannot reach NATS at {}", nats.url)),
        "{e}"
    );
    assert!(!e.contains("tok-wrong"), "{e}");
    // None at all: refused too.
    assert!(
        Remote::connect(&nats.url, "t", &RemoteAuth::default())
            .await
            .is_err()
    );
    // Both the URL's and the environment's: said, not guessed.
    let e = Remote::connect(&in_url, "t", &auth)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("credentials both in the URL and in NATS_TOKEN"),
        "{e}"
    );
    assert!(!e.contains(TOKEN), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_nkey_seed_file_connects() {
    let user = nkeys::KeyPair::new_user();
    let conf = format!(
        "authorization {{\n  users: [ {{ nkey: \"{}\" }} ]\n}}\n",
        user.public_key()
    );
    let Some(nats) = NatsServer::start_with(&conf) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let seed = dir.path().join("user.nk");
    std::fs::write(&seed, format!("{}\n", user.seed().unwrap())).unwrap();
    let env = |name: &str| (name == "NATS_NKEY").then(|| seed.display().to_string());
    let remote = Remote::connect(&nats.url, "t", &RemoteAuth::from_env(&env))
        .await
        .unwrap();
    remote.ensure().await.unwrap();

    let other = nkeys::KeyPair::new_user();
    let other_seed = dir.path().join("other.nk");
    std::fs::write(&other_seed, other.seed().unwrap()).unwrap();
    let refused = RemoteAuth {
        nkey: Some(other_seed),
        ..Default::default()
    };
    assert!(Remote::connect(&nats.url, "t", &refused).await.is_err());
}

/// A JWT as `nsc` makes it (NATS decentralized auth, `nats-io/jwt` v2): header,
/// `claims` with `iss` = `issuer`'s public key and `sub` = `subject`, signed by `issuer`.
fn jwt(issuer: &nkeys::KeyPair, subject: &str, name: &str, nats: serde_json::Value) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = b64.encode(r#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let claims = serde_json::json!({
        "jti": format!("JTI{}", subject.get(..20).unwrap_or(subject)),
        "iat": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
        "iss": issuer.public_key(),
        "name": name,
        "sub": subject,
        "nats": nats,
    });
    let body = b64.encode(claims.to_string());
    let signed = format!("{header}.{body}");
    let signature = issuer.sign(signed.as_bytes()).unwrap();
    format!("{signed}.{}", b64.encode(signature))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creds_file_connects_to_a_server_in_operator_mode() {
    let operator = nkeys::KeyPair::new_operator();
    let account = nkeys::KeyPair::new_account();
    let user = nkeys::KeyPair::new_user();
    let operator_jwt = jwt(
        &operator,
        &operator.public_key(),
        "arbor-test-operator",
        serde_json::json!({"type": "operator", "version": 2}),
    );
    let unlimited = -1;
    let account_jwt = jwt(
        &operator,
        &account.public_key(),
        "arbor-test-account",
        serde_json::json!({
            "limits": {
                "subs": unlimited, "data": unlimited, "payload": unlimited,
                "imports": unlimited, "exports": unlimited, "wildcards": true,
                "conn": unlimited, "leaf": unlimited, "mem_storage": unlimited,
                "disk_storage": unlimited, "streams": unlimited, "consumer": unlimited
            },
            "default_permissions": {"pub": {}, "sub": {}},
            "type": "account",
            "version": 2
        }),
    );
    let user_jwt = jwt(
        &account,
        &user.public_key(),
        "arbor-test-user",
        serde_json::json!({
            "pub": {}, "sub": {}, "subs": unlimited, "data": unlimited,
            "payload": unlimited, "type": "user", "version": 2
        }),
    );
    // JetStream in operator mode needs a system account.
    let system = nkeys::KeyPair::new_account();
    let system_jwt = jwt(
        &operator,
        &system.public_key(),
        "SYS",
        serde_json::json!({"type": "account", "version": 2}),
    );
    let conf = format!(
        "operator: \"{operator_jwt}\"\nsystem_account: {sys}\nresolver: MEMORY\nresolver_preload: {{\n  {}: \"{account_jwt}\"\n  {sys}: \"{system_jwt}\"\n}}\n",
        account.public_key(),
        sys = system.public_key()
    );
    let Some(nats) = NatsServer::start_with(&conf) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("user.creds");
    std::fs::write(
        &creds,
        format!(
            "-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n\
             ************************* IMPORTANT *************************\n\
             NKEY Seed printed below can be used to sign and prove identity.\n\n\
             -----BEGIN USER NKEY SEED-----\n{}\n------END USER NKEY SEED------\n",
            user.seed().unwrap()
        ),
    )
    .unwrap();
    let env = |name: &str| (name == "NATS_CREDS").then(|| creds.display().to_string());
    let remote = Remote::connect(&nats.url, "t", &RemoteAuth::from_env(&env))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", nats.log()));
    remote.ensure().await.unwrap();
    assert!(
        Remote::connect(&nats.url, "t", &RemoteAuth::default())
            .await
            .is_err()
    );
}
