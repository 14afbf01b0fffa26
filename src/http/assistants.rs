//! `GET /v1/assistants`, and the one rule that binds a conversation to its assistant.
//!
//! The list shows what a user may pick — the operator's assistants, their own and those shared
//! with a group they are in (`registry`) — with name, description and tool patterns, never the
//! operator's instructions. The binding rule: a new conversation takes the assistant the
//! request names (or the default one); an existing conversation keeps the one it was created
//! with, and a request naming another is refused with 409. An unknown name is a 400.

use axum::Json;
use axum::extract::{Extension, State};
use serde::Serialize;
use std::sync::Arc;

use super::AppState;
use crate::assistants::{Assistant, AssistantInfo, Assistants, Bindings};
use crate::auth::Caller;
use crate::error::{ApiError, Error};
use crate::store::chat::ChatStore;
use crate::store::key::ConversationKey;

#[derive(Serialize)]
pub struct AssistantList {
    pub assistants: Vec<AssistantInfo>,
    /// The assistant a new conversation gets when the request names none.
    pub default: String,
    /// The caller's own assistants in full (instructions, folders, sharing state), to edit.
    pub mine: Vec<super::registry::ProposalView>,
    /// What the admin allows personal assistants (their allow-lists must lie within it).
    #[serde(rename = "personalTools")]
    pub personal_tools: Vec<String>,
}

pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(groups): Extension<crate::auth::identity::Groups>,
) -> Result<Json<AssistantList>, ApiError> {
    let registry = &state.services.registry;
    let rid = &caller.request_id;
    let assistants = registry.for_caller(&caller, &groups).await.map_err(|e| e.with_request(rid))?;
    let mine = registry
        .store()
        .personal_of(&crate::store::key::UserId::of(&caller))
        .await
        .map_err(|e| e.with_request(rid))?
        .iter()
        .filter_map(super::registry::ProposalView::of)
        .collect();
    let personal_tools = registry.policy().await.map_err(|e| e.with_request(rid))?.personal_tools;
    Ok(Json(AssistantList {
        mine,
        personal_tools,
        assistants: assistants.all().iter().map(|a| AssistantInfo::for_caller(a, &caller.uid)).collect(),
        default: assistants.default_assistant().name.clone(),
    }))
}

/// The assistant this request's turn runs with. `requested` is the body's `assistant` field.
pub async fn resolve(
    assistants: &Assistants,
    store: &dyn ChatStore,
    conversation: &ConversationKey,
    requested: Option<&str>,
) -> Result<Arc<Assistant>, Error> {
    resolve_cached(assistants, store, &Bindings::default(), conversation, requested, false).await
}

/// [`resolve`], reading the binding from `bindings` when the conversation runs here (no read).
/// `assistants` is what the caller may use now (`registry::Registry::for_caller`), so a change
/// of the registry applies on the very next turn: the cache keeps which assistant a
/// conversation is bound to, never what that assistant is. `fallback` is the admin's word
/// that a conversation whose assistant was removed continues with the default one.
/// Whether the conversation exists is not decided here: the request is resolved before its turn
/// holds the conversation, and another instance (or a delete) may change it in between, so
/// the turn reads the history itself (`actors::conversation`).
pub async fn resolve_cached(
    assistants: &Assistants,
    store: &dyn ChatStore,
    bindings: &Bindings,
    conversation: &ConversationKey,
    requested: Option<&str>,
    fallback: bool,
) -> Result<Arc<Assistant>, Error> {
    let binding = match bindings.get(conversation) {
        Some(bound) => Some(Some(bound.name.clone())),
        None => store.assistant_of(conversation).await?,
    };
    let default = assistants.default_assistant();
    let bound = match binding {
        // A new conversation: what was asked for, or the default.
        None => {
            return Ok(match requested {
                Some(name) => known(assistants, name)?,
                None => default.clone(),
            });
        }
        // Created before assistants existed: it belongs to the default one.
        Some(None) => default.clone(),
        Some(Some(name)) => match assistants.get(&name) {
            Some(bound) => bound.clone(),
            // Removed (or no longer shared with the caller): never silently another one,
            // unless the admin said so.
            None if !fallback => return Err(Error::AssistantGone(name)),
            None => {
                return match requested {
                    Some(w) if w != name && w != default.name => Err(Error::AssistantBound(name)),
                    // The default's tools and instructions under the binding's name: the
                    // conversation stays bound to what it was created with (chat.db), and
                    // runs as the default until an assistant of that name exists again.
                    _ => Ok(Arc::new(Assistant {
                        name,
                        ..default.as_ref().clone()
                    })),
                };
            }
        },
    };
    match requested {
        Some(w) if w != bound.name => {
            known(assistants, w)?;
            Err(Error::AssistantBound(bound.name.clone()))
        }
        _ => Ok(bound),
    }
}

fn known(assistants: &Assistants, name: &str) -> Result<Arc<Assistant>, Error> {
    assistants
        .get(name)
        .cloned()
        .ok_or_else(|| Error::BadRequest(format!("unknown assistant {name:?}")))
}

/// The assistant an existing conversation is bound to, as `assistants` has it now.
/// `None` when the conversation does not exist (for this user: keys carry the uid);
/// `AssistantGone` when its assistant was removed (never swapped for another).
pub async fn bound_assistant(
    assistants: &Assistants,
    store: &dyn ChatStore,
    conversation: &ConversationKey,
) -> Result<Option<Arc<Assistant>>, Error> {
    Ok(match store.assistant_of(conversation).await? {
        None => None,
        Some(Some(name)) => Some(assistants.get(&name).ok_or(Error::AssistantGone(name))?.clone()),
        // Created before assistants existed: it belongs to the default one.
        Some(None) => Some(assistants.default_assistant().clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assistants::Known;
    use crate::store::key::test_key as key;
    use crate::ui_stream::{Role, UiMessage, UiPart};

    fn two() -> Assistants {
        let servers = vec!["nextcloud".to_string()];
        let known = Known {
            servers: &servers,
            primary_model: "m",
            fallback_model: None,
        };
        Assistants::parse(
            "[[assistant]]\nname = \"default\"\ndescription = \"all\"\ntools = [\"*/*\"]\n\
             [[assistant]]\nname = \"cal\"\ndescription = \"calendar\"\ntools = [\"nextcloud/calendar_*\"]\n",
            &known,
        )
        .unwrap()
    }

    fn msg(text: &str) -> UiMessage {
        UiMessage {
            id: text.into(),
            role: Role::User,
            parts: vec![UiPart::Text {
                text: text.into(),
                state: None,
            }],
        }
    }

    #[tokio::test]
    async fn binding_rules() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::chat::SqliteChat::open_without_turns(&dir.path().join("chat.db")).unwrap();
        let a = two();
        assert_eq!(resolve(&a, &store, &key("u", "c"), None).await.unwrap().name, "default");
        assert_eq!(resolve(&a, &store, &key("u", "c"), Some("cal")).await.unwrap().name, "cal");
        assert!(matches!(
            resolve(&a, &store, &key("u", "c"), Some("nope")).await,
            Err(Error::BadRequest(_))
        ));
        store.save_user_message(&key("u", "c"), &msg("hi"), "cal").await.unwrap();
        assert_eq!(
            resolve(&a, &store, &key("u", "c"), None).await.unwrap().name,
            "cal",
            "the binding, not the default"
        );
        assert_eq!(resolve(&a, &store, &key("u", "c"), Some("cal")).await.unwrap().name, "cal");
        assert!(matches!(resolve(&a, &store, &key("u", "c"), Some("default")).await, Err(Error::AssistantBound(ref b)) if b == "cal"));
        // The same conversation id of another user is another conversation.
        assert_eq!(resolve(&a, &store, &key("v", "c"), Some("default")).await.unwrap().name, "default");
        // An assistant removed from the file: refused, never silently swapped for another.
        store.save_user_message(&key("u", "gone"), &msg("hi"), "retired").await.unwrap();
        assert!(matches!(
            resolve(&a, &store, &key("u", "gone"), None).await,
            Err(Error::AssistantGone(_))
        ));
    }
}
