//! Session ids (SPEC §7 "Ids"). CONTRACT STUB — the session helper replaces the bodies.

/// A new root session id (UUID v4 string).
pub fn new_root_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A new sub-session id `{parent_span}-{child_span}_{agent}`.
pub fn new_child_id(parent_id: &str, agent_name: &str) -> String {
    let _ = (parent_id, agent_name);
    todo!("session helper")
}

/// `Ok` when `id` is non-empty and free of `/`, `\`, `..`, NUL and a leading `.`;
/// else the reason.
pub fn validate(id: &str) -> Result<(), String> {
    let _ = id;
    todo!("session helper")
}
