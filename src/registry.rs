//! The registry managed inside Nextcloud (issue #30): MCP servers and assistants an admin
//! registers in the admin page, the admin's policy for personal assistants, and the personal
//! assistants people build and share. Rows live in the orchestrator's database
//! (`store::registry`), so every instance sees a change on its next request.
//!
//! This module owns the documents' shapes (the same field names as the TOML file and
//! `TAMEBI_MCP_SERVERS`), their validation (through the very parsers the file and the variable
//! go through), and the composition a request sees: the operator's assistants (file, then
//! admin page), the caller's own, and those shared with a group the app says the caller is in.
//!
//! It must never widen anything. A personal assistant's allow-list must lie within what the
//! admin allows personal assistants (checked here, on every write, not only in the UI), and
//! that ceiling applies again on every turn; an approval covers one version, so an owner's
//! edit needs approval again. Group membership is never stored: it comes signed with each
//! request (`auth::identity::groups_of`), so leaving a group in Nextcloud ends access on the
//! next request (docs/security.md). Environment and TOML entries are read-only here; a
//! server whose credential the environment and the database disagree about is not used at
//! all (G1: fail closed).

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use crate::assistants::{Assistant, Assistants, Known, Origin, ToolPattern};
use crate::auth::Caller;
use crate::auth::identity::Groups;
use crate::config::{Config, McpServer, ServerAuth};
use crate::error::Error;
use crate::store::key::UserId;
use crate::store::registry::{EntryKind, POLICY_ROW, PersonalRow, RegistryStore, Snapshot};
use crate::types::{LOCAL_SERVER, ModelRole};

const MAX_LABEL_CHARS: usize = 64;
const MAX_DESCRIPTION_CHARS: usize = 300;
const MAX_INSTRUCTIONS_CHARS: usize = 8_000;
const MAX_FOLDERS: usize = 10;
const MAX_FOLDER_CHARS: usize = 512;
/// Most personal assistants one person keeps.
pub const MAX_PERSONAL: usize = 50;

/// A server as the admin page sends it: `name`, `url`, `auth` (`none` or `nextcloud`), and the
/// trust option (`reads`, for `auth=none` only), as in `TAMEBI_MCP_SERVERS`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    pub name: String,
    pub url: String,
    pub auth: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<String>,
}

impl ServerSpec {
    /// The server it describes, through the parser `TAMEBI_MCP_SERVERS` entries go through.
    pub fn to_server(&self) -> Result<McpServer, String> {
        for (field, value) in [("name", &self.name), ("url", &self.url), ("auth", &self.auth)] {
            if value.contains([',', ';']) || (field != "url" && value.contains('=')) {
                return Err(format!("{field} must not contain , or ; (nor = outside the URL)"));
            }
        }
        let trust = match self.trust.as_deref() {
            None | Some("") => String::new(),
            Some(t) if !t.contains([',', ';']) => format!(";trust={t}"),
            Some(_) => return Err("trust must not contain , or ;".into()),
        };
        crate::config::mcp_server_entry(&format!("{}={};auth={}{trust}", self.name, self.url, self.auth))
    }
}

/// An assistant as the admin page sends it: the TOML file's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssistantSpec {
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub instructions: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub tools: Vec<String>,
}

/// What the admin allows personal assistants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Policy {
    /// The ceiling of every personal assistant's allow-list (`server/tool` patterns). Empty
    /// (the default): personal assistants get no tools until an admin allows some.
    #[serde(default)]
    pub personal_tools: Vec<String>,
    /// Whether a conversation whose assistant was removed continues with the default one
    /// (false, the default: it is refused with a clear message).
    #[serde(default)]
    pub fallback_to_default: bool,
}

/// A personal assistant as its owner sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonalSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub instructions: String,
    pub tools: Vec<String>,
    /// Folders of the owner's to search first with files_grep.
    #[serde(default)]
    pub folders: Vec<String>,
}

/// Where a server entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `TAMEBI_MCP_SERVERS` / `TAMEBI_ASSISTANTS`: read-only in the admin page.
    Environment,
    /// Registered in Nextcloud's admin page.
    Admin,
}

/// One server as the admin page lists it.
#[derive(Debug, Clone, Serialize)]
pub struct ServerEntry {
    #[serde(flatten)]
    pub spec: ServerSpec,
    pub source: Source,
    /// The environment and the database disagree about its credential: not used at all.
    pub conflict: bool,
}

/// The servers in use and how each came to be (or not to be) used.
#[derive(Debug, Clone, Default)]
pub struct ServerSet {
    /// What the tool-server actors run: the environment's, then the admin's, minus conflicts.
    pub active: Vec<McpServer>,
    pub entries: Vec<ServerEntry>,
}

fn spec_of(server: &McpServer) -> ServerSpec {
    ServerSpec {
        name: server.name.clone(),
        url: server.url.to_string(),
        auth: auth_str(server.auth).into(),
        trust: (server.trust == crate::config::ServerTrust::Reads).then(|| "reads".into()),
    }
}

pub fn auth_str(auth: ServerAuth) -> &'static str {
    match auth {
        ServerAuth::Nextcloud => "nextcloud",
        ServerAuth::None => "none",
    }
}

/// The registry: the operator's configuration (read-only) and the database's rows.
pub struct Registry {
    store: Arc<dyn RegistryStore>,
    env_servers: Vec<McpServer>,
    /// The TOML file's assistants; None when there is no file (the built-in default then).
    file: Option<Arc<Assistants>>,
    primary_model: String,
    fallback_model: Option<String>,
}

impl Registry {
    pub fn new(config: &Config, file: Option<Arc<Assistants>>, store: Arc<dyn RegistryStore>) -> Registry {
        Registry {
            store,
            env_servers: config.mcp_servers.clone(),
            file,
            primary_model: config.model.model.clone(),
            fallback_model: config.model.fallback_model.clone(),
        }
    }

    pub fn store(&self) -> &Arc<dyn RegistryStore> {
        &self.store
    }

    /// The registry's rows as they are now, with `uid`'s own assistants when given: what one
    /// request reads (PostgreSQL: one small query while nothing changed, `store::registry`).
    pub async fn snapshot(&self, uid: Option<&UserId>) -> Result<Snapshot, Error> {
        self.store.snapshot(uid).await
    }

    /// Every server: the environment's first (read-only), then the admin's. A name both define
    /// is the environment's when they agree on its credential, and nobody's when they do not.
    pub async fn servers(&self) -> Result<ServerSet, Error> {
        Ok(self.servers_in(&self.snapshot(None).await?))
    }

    /// [`Registry::servers`] as of `snapshot`.
    pub fn servers_in(&self, snapshot: &Snapshot) -> ServerSet {
        let mut set = ServerSet {
            active: self.env_servers.clone(),
            entries: self
                .env_servers
                .iter()
                .map(|s| ServerEntry {
                    spec: spec_of(s),
                    source: Source::Environment,
                    conflict: false,
                })
                .collect(),
        };
        for (name, body) in snapshot.shared.entries(EntryKind::Server) {
            let server = match serde_json::from_str::<ServerSpec>(body)
                .map_err(|e| e.to_string())
                .and_then(|s| s.to_server())
            {
                Ok(server) => server,
                Err(why) => {
                    tracing::error!(server = %name, why = %why, "a registered server no longer validates; not used");
                    continue;
                }
            };
            match set.active.iter().position(|s| s.name == server.name) {
                Some(at) if set.active[at].auth != server.auth => {
                    // G1: fail closed. Which credential the server gets is not guessed.
                    tracing::error!(server = %name, "TAMEBI_MCP_SERVERS and the admin page disagree about this server's auth; it is not used");
                    set.active.remove(at);
                    for e in set.entries.iter_mut().filter(|e| e.spec.name == *name) {
                        e.conflict = true;
                    }
                    set.entries.push(ServerEntry {
                        spec: spec_of(&server),
                        source: Source::Admin,
                        conflict: true,
                    });
                }
                // The same credential: the environment's entry stands (it is read-only).
                Some(_) => {}
                None if set.entries.iter().any(|e| e.spec.name == *name && e.conflict) => {}
                None => {
                    set.entries.push(ServerEntry {
                        spec: spec_of(&server),
                        source: Source::Admin,
                        conflict: false,
                    });
                    set.active.push(server);
                }
            }
        }
        set
    }

    fn known<'a>(&'a self, servers: &'a [String]) -> Known<'a> {
        Known {
            servers,
            primary_model: &self.primary_model,
            fallback_model: self.fallback_model.as_deref(),
        }
    }

    /// Server names a literal pattern may name: the active ones and the orchestrator's own.
    fn server_names(set: &ServerSet) -> Vec<String> {
        set.active
            .iter()
            .map(|s| s.name.clone())
            .chain(std::iter::once(LOCAL_SERVER.to_string()))
            .collect()
    }

    /// Whether `name` is one of the file's assistants, or the built-in `default` when there is
    /// no file: the operator's configuration, read-only in the admin page.
    pub fn file_defines(&self, name: &str) -> bool {
        match &self.file {
            Some(file) => file.get(name).is_some(),
            None => name == crate::assistants::DEFAULT_ASSISTANT,
        }
    }

    /// Checks an admin's assistant against the file's rules and the servers in use now.
    pub async fn check_assistant(&self, spec: &AssistantSpec) -> Result<Assistant, String> {
        let names = Self::server_names(&self.servers().await.map_err(|e| e.to_string())?);
        self.assistant_of(spec, &names)
    }

    fn assistant_of(&self, spec: &AssistantSpec, servers: &[String]) -> Result<Assistant, String> {
        // A JSON string is a valid TOML basic string (the same escapes), so the table is the
        // one the file would hold and goes through the file's own checks.
        let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let mut table = format!(
            "[[assistant]]\nname = {}\ndescription = {}\ninstructions = {}\n",
            q(&spec.name),
            q(&spec.description),
            q(&spec.instructions)
        );
        if let Some(model) = &spec.model {
            table.push_str(&format!("model = {}\n", q(model)));
        }
        let tools: Vec<String> = spec.tools.iter().map(|t| q(t)).collect();
        table.push_str(&format!("tools = [{}]\n", tools.join(", ")));
        Assistants::check_one(&table, &self.known(servers))
    }

    /// The operator's assistants: the file's (or the built-in default), then the admin's.
    pub async fn operator_assistants(&self) -> Result<Vec<Arc<Assistant>>, Error> {
        Ok(self.operator_assistants_in(&self.snapshot(None).await?))
    }

    fn operator_assistants_in(&self, snapshot: &Snapshot) -> Vec<Arc<Assistant>> {
        let mut list: Vec<Arc<Assistant>> = match &self.file {
            Some(file) => file.all().to_vec(),
            None => Assistants::default().all().to_vec(),
        };
        for (name, body) in snapshot.shared.entries(EntryKind::Assistant) {
            if list.iter().any(|a| a.name == *name) {
                continue;
            }
            // Stored only after validation; its servers may have gone since, which only means
            // its patterns match nothing there: read back without the server check.
            let read = serde_json::from_str::<AssistantSpec>(body)
                .map_err(|e| e.to_string())
                .and_then(|spec| {
                    let literal: Vec<String> = spec
                        .tools
                        .iter()
                        .filter_map(|t| t.split_once('/').map(|(s, _)| s.to_string()))
                        .collect();
                    self.assistant_of(&spec, &literal)
                });
            match read {
                Ok(a) => list.push(Arc::new(a)),
                Err(why) => tracing::error!(assistant = %name, why = %why, "a registered assistant no longer validates; not offered"),
            }
        }
        list
    }

    pub async fn policy(&self) -> Result<Policy, Error> {
        Ok(Self::policy_in(&self.snapshot(None).await?))
    }

    /// [`Registry::policy`] as of `snapshot`.
    pub fn policy_in(snapshot: &Snapshot) -> Policy {
        snapshot
            .shared
            .entries(EntryKind::Policy)
            .iter()
            .find(|(n, _)| n == POLICY_ROW)
            .and_then(|(_, body)| serde_json::from_str(body).ok())
            .unwrap_or_default()
    }

    /// What `caller` may pick and use now: the operator's assistants, their own, and those
    /// approved for a group the app signed them into on this request.
    pub async fn for_caller(&self, caller: &Caller, groups: &Groups) -> Result<Assistants, Error> {
        let snapshot = self.snapshot(Some(&UserId::of(caller))).await?;
        Ok(self.for_caller_in(&snapshot, caller, groups))
    }

    /// [`Registry::for_caller`] as of `snapshot`, taken with the caller's uid (their own
    /// assistants are in it).
    pub fn for_caller_in(&self, snapshot: &Snapshot, caller: &Caller, groups: &Groups) -> Assistants {
        let mut list = self.operator_assistants_in(snapshot);
        let policy = Self::policy_in(snapshot);
        let ceiling = patterns(&policy.personal_tools).unwrap_or_default();
        let shared = snapshot
            .shared
            .proposed
            .iter()
            .filter(|r| r.uid != caller.uid && r.shared() && r.share_group.as_ref().is_some_and(|g| groups.0.contains(g)));
        // Only the caller's own rows: a snapshot taken for someone else offers them nothing.
        let own = snapshot.own.iter().filter(|r| r.uid == caller.uid);
        for row in own.chain(shared) {
            match personal_assistant(row, &ceiling) {
                Some(a) => list.push(Arc::new(a)),
                None => tracing::error!(id = %row.id, "a stored personal assistant does not parse; not offered"),
            }
        }
        Assistants::from_list(list)
    }

    /// Checks a person's assistant: its fields, and every pattern within the admin's ceiling.
    pub async fn check_personal(&self, spec: &PersonalSpec) -> Result<(), String> {
        let label = spec.name.trim();
        if label.is_empty() || label.chars().count() > MAX_LABEL_CHARS || label.chars().any(char::is_control) {
            return Err(format!("name must be 1-{MAX_LABEL_CHARS} characters on one line"));
        }
        if spec.description.chars().count() > MAX_DESCRIPTION_CHARS || spec.description.contains('\n') {
            return Err(format!(
                "description must be one line of at most {MAX_DESCRIPTION_CHARS} characters"
            ));
        }
        if spec.instructions.chars().count() > MAX_INSTRUCTIONS_CHARS {
            return Err(format!("instructions must be at most {MAX_INSTRUCTIONS_CHARS} characters"));
        }
        if spec.folders.len() > MAX_FOLDERS {
            return Err(format!("at most {MAX_FOLDERS} folders"));
        }
        for f in &spec.folders {
            if !f.starts_with('/')
                || f.chars().count() > MAX_FOLDER_CHARS
                || f.chars().any(char::is_control)
                || f.split('/').any(|p| p == "..")
            {
                return Err(format!("folder {f:?} must be an absolute path of yours (starting with /, no ..)"));
            }
        }
        let ceiling = patterns(&self.policy().await.map_err(|e| e.to_string())?.personal_tools)?;
        for p in patterns(&spec.tools)? {
            if !ceiling.iter().any(|c| p.within(c)) {
                return Err(format!(
                    "tool pattern `{p}` is not within what the admin allows personal assistants ({})",
                    if ceiling.is_empty() {
                        "nothing yet".to_string()
                    } else {
                        ceiling.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
                    }
                ));
            }
        }
        Ok(())
    }
}

/// Parses a list of patterns; the message names the first bad one.
pub fn patterns(raw: &[String]) -> Result<Vec<ToolPattern>, String> {
    raw.iter().map(|p| ToolPattern::parse(p)).collect()
}

/// A stored personal assistant as a turn runs it: its owner's words marked as theirs, the
/// admin's ceiling applied on top of its own list, the primary model.
pub fn personal_assistant(row: &PersonalRow, ceiling: &[ToolPattern]) -> Option<Assistant> {
    let spec: PersonalSpec = serde_json::from_str(&row.body).ok()?;
    let tools = patterns(&spec.tools).ok()?;
    let mut instructions = spec.instructions.trim().to_string();
    if !spec.folders.is_empty() {
        // Where to look first; files_grep still runs with the caller's own token, so a folder
        // the caller cannot read simply finds nothing.
        instructions.push_str(&format!(
            "\n\nWhen searching files, search these folders first with files_grep: {}",
            spec.folders.join(", ")
        ));
    }
    Some(Assistant {
        name: row.id.clone(),
        description: spec.description,
        instructions,
        model: ModelRole::Primary,
        tools,
        origin: Origin::Person {
            owner: row.uid.clone(),
            label: spec.name.trim().to_string(),
        },
        ceiling: Some(ceiling.to_vec()),
    })
}

/// A personal assistant's id: `u-` and 32 hex digits (never a valid operator name clash:
/// operators' names are checked against this prefix).
pub fn new_personal_id() -> String {
    format!("u-{}", uuid::Uuid::new_v4().simple())
}

pub fn is_personal_id(id: &str) -> bool {
    id.len() == 34 && id.starts_with("u-") && id[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> ToolPattern {
        ToolPattern::parse(s).unwrap()
    }

    #[test]
    fn a_pattern_within_another_never_matches_more() {
        assert!(p("nextcloud/calendar_list").within(&p("nextcloud/calendar_*")));
        assert!(p("nextcloud/calendar_*").within(&p("nextcloud/*")));
        assert!(p("nextcloud/calendar_*").within(&p("*/*")));
        assert!(p("a/x*y").within(&p("a/x*")));
        assert!(!p("nextcloud/*").within(&p("nextcloud/calendar_*")), "wider than its ceiling");
        assert!(!p("*/files_list").within(&p("nextcloud/*")));
        assert!(!p("nextcloud/cal*").within(&p("nextcloud/calendar_*")));
        assert!(!p("a/c*").within(&p("a/c*r")));
        assert!(!p("mail/*").within(&p("nextcloud/*")));
    }

    #[test]
    fn personal_ids() {
        let id = new_personal_id();
        assert!(is_personal_id(&id), "{id}");
        assert!(!is_personal_id("default"));
        assert!(!is_personal_id("u-xyz"));
    }

    #[test]
    fn a_server_spec_goes_through_the_variables_parser() {
        let s = |name: &str, url: &str, auth: &str, trust: Option<&str>| ServerSpec {
            name: name.into(),
            url: url.into(),
            auth: auth.into(),
            trust: trust.map(Into::into),
        };
        let ok = s("probe", "http://127.0.0.1:9/mcp", "none", Some("reads")).to_server().unwrap();
        assert_eq!(ok.trust, crate::config::ServerTrust::Reads);
        assert!(s("probe", "ftp://x/mcp", "none", None).to_server().is_err());
        assert!(s("probe", "http://x/mcp", "token", None).to_server().is_err());
        assert!(s("a b", "http://x/mcp", "none", None).to_server().is_err());
        assert!(s("nc", "http://x/mcp", "nextcloud", Some("reads")).to_server().is_err());
        assert!(
            s("x", "http://x/mcp;auth=nextcloud", "none", None).to_server().is_err(),
            "no smuggled options"
        );
        assert!(s("tamebi", "http://x/mcp", "none", None).to_server().is_err(), "reserved");
    }
}
