//! Making a session live: resuming a stored one from disk (its plan restored, or a
//! root Amplifier wrote rebuilt from its bundle; endpoints moved; the lock taken) and
//! registering a new one — also as the root makes a remote child's own sub-sessions
//! live (`remote::Adopt`). Does not own: the live map's other uses (`runtime`), what a
//! turn does with the session (`turn`).

use super::*;
use crate::session::SessionWriter;
use crate::session::protocol::ProviderEndpointChangedEvent;

impl remote::Adopt for Runtime {
    fn adopt(&self, metadata: Metadata, plan: MountPlan) -> Result<Arc<LiveSession>, EngineError> {
        Runtime::register(self, metadata, plan, Vec::new())
    }

    fn resume(&self, id: &str) -> Result<Arc<LiveSession>, EngineError> {
        Runtime::live_or_resume(self, id)
    }
}

impl Runtime {
    /// The live session `id`, resuming it from disk when not loaded: fresh load,
    /// `config` required (else `Corrupted`), the lock taken (`Locked` when another
    /// process has it, then released again until a turn begins), provider endpoints moved to those the current config or
    /// environment set, `session:resume` published, then `provider:endpoint_changed`
    /// for each endpoint that moved.
    pub(crate) fn live_or_resume(&self, id: &str) -> Result<Arc<LiveSession>, EngineError> {
        let mut live = lock(&self.live);
        if let Some(session) = live.get(id) {
            return Ok(session.clone());
        }
        SessionId::parse(id).map_err(StoreError::from)?;
        let parked = self.take_parked(id);
        let (loaded, reused) = self.store.load_reusing(id, parked)?;
        if reused {
            tracing::debug!(session = id, "resumed over the transcript a viewer parsed");
        }
        let (config, rebuilt) = self.plan_to_resume(id, &loaded.metadata)?;
        for warning in &loaded.warnings {
            tracing::warn!(session = id, "{warning}");
        }
        // The current config and environment choose the endpoint (SPEC §7 "Resume").
        let (plan, moved) = providers::follow_current_endpoints(
            MountPlan::from_value(config),
            &self.turn_env.config,
            &self.turn_env.env,
        );
        let mut writer = self.store.open(id)?;
        writer.set_secrets(providers::secrets(
            &plan,
            &self.turn_env.config,
            &self.turn_env.env,
        ));
        let mut metadata = loaded.metadata;
        metadata.session_id = id.into();
        if !moved.is_empty() || rebuilt.is_some() {
            // Sub-sessions re-route and spawn from the stored plan: keep it current.
            metadata.config = Some(stored_plan::stored_config(&self.turn_env, &plan));
        }
        if rebuilt.is_some() && metadata.agent_name.is_none() {
            metadata.agent_name = Some(self.turn_env.bundle.name.clone());
        }
        let session = self.insert_live(&mut live, metadata, plan, writer, loaded.transcript);
        drop(live);
        announce_resume(&session, rebuilt, moved);
        // Loaded, not running: held only while a turn runs (issue 35 item 4), so a
        // session opened here and never run stays free for another process.
        session.release_if_idle();
        Ok(session)
    }

    /// The mount plan stored session `id` (its `metadata`) resumes with: its stored
    /// `config`, or for a root Amplifier wrote (no `config`; a fork it wrote is a root
    /// too) the plan rebuilt from its bundle, with the `session:rebuilt` saying so.
    ///
    /// Errors: a sub-session without `config` (`Corrupted`: it cannot be rebuilt); the
    /// bundle's errors when rebuilding.
    fn plan_to_resume(
        &self,
        id: &str,
        metadata: &Metadata,
    ) -> Result<(Value, Option<SessionRebuiltEvent>), EngineError> {
        if let Some(config) = metadata.config.clone() {
            return Ok((stored_plan::restored(config), None));
        }
        if metadata.parent_id.is_none() || metadata.forked_from_turn().is_some() {
            let stored = metadata.bundle.clone();
            let (plan, note) = root_plan::rebuild_root(&self.turn_env, stored.as_deref())?;
            let rebuilt = SessionRebuiltEvent {
                bundle: stored,
                note,
            };
            return Ok((plan.to_value(), Some(rebuilt)));
        }
        Err(StoreError::Corrupted {
            id: id.to_string(),
            detail: "metadata.json has no `config` (the merged mount plan), so the sub-session cannot be rebuilt".into(),
        }
        .into())
    }

    /// Creates the session directory for `metadata` and makes it live.
    pub(crate) fn register(
        &self,
        metadata: Metadata,
        plan: MountPlan,
        transcript: Vec<Message>,
    ) -> Result<Arc<LiveSession>, EngineError> {
        // Secrets are known before the first metadata write, so no file (not even the
        // backup of a later write) ever holds a key.
        let writer = self.store.create_with_secrets(
            &metadata,
            providers::secrets(&plan, &self.turn_env.config, &self.turn_env.env),
        )?;
        let mut live = lock(&self.live);
        Ok(self.insert_live(&mut live, metadata, plan, writer, transcript))
    }

    /// A live session made of its parts (its tree's root found through `live` and the
    /// store), inserted into `live` under its id.
    fn insert_live(
        &self,
        live: &mut HashMap<SessionId, Arc<LiveSession>>,
        metadata: Metadata,
        plan: MountPlan,
        writer: SessionWriter,
        transcript: Vec<Message>,
    ) -> Arc<LiveSession> {
        let root_id = root_of(live, &self.store, &metadata);
        let session = Arc::new(LiveSession::new(
            metadata,
            root_id.into(),
            plan,
            writer,
            transcript,
            self.bus.clone(),
            self.turn_env.paths.cwd.clone(),
        ));
        live.insert(session.id.clone(), session.clone());
        session
    }
}

/// Publishes a resumed session's `session:resume`, then its `session:rebuilt` (when
/// its plan was rebuilt) and a `provider:endpoint_changed` per endpoint that `moved`
/// (each also logged).
fn announce_resume(
    session: &LiveSession,
    rebuilt: Option<SessionRebuiltEvent>,
    moved: Vec<ProviderEndpointChangedEvent>,
) {
    let meta = session.metadata();
    session.emit(EngineEvent::SessionResume(SessionResumeEvent {
        agent: session.agent_name.clone(),
        depth: session.depth,
        turn_count: meta.turn_count,
        status: meta.status,
    }));
    if let Some(rebuilt) = rebuilt {
        tracing::info!(session = session.id.as_str(), "{}", rebuilt.note());
        session.emit(EngineEvent::SessionRebuilt(rebuilt));
    }
    for changed in moved {
        tracing::info!(session = session.id.as_str(), "{}", changed.note());
        session.emit(EngineEvent::ProviderEndpointChanged(changed));
    }
}
