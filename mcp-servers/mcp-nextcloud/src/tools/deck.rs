//! Deck tools over Deck's REST API (`/index.php/apps/deck/api/v1.0`): boards, one board's
//! stacks and cards, create a card, move a card. Deck answers 403 for a board the caller
//! cannot see; that is `not_found` here like every other refusal.
//!
//! A write is reported as what Deck holds afterwards, never as what was asked: a created card
//! is read back, a moved card's stack is taken from Deck's own read-back in the reorder answer
//! (or the board, read again), and a difference is an `Unconfirmed` error. Nothing here is
//! retried: a second create would make a second card.

use mcp_resource_server::Caller;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::schemars::JsonSchema;
use rmcp::{tool, tool_router};
use serde::{Deserialize, Serialize};

use super::args::{self, DeckBoardArgs, DeckCreateCardArgs, DeckMoveCardArgs, NoArgs, When};
use super::{Tools, input, output};
use crate::error::Error;
use crate::nextcloud::Session;
use crate::output::Output;

/// The deck tools: one `#[tool]` function each (see [`super`] for how to add one).
#[tool_router(router = deck_router, vis = "pub(super)")]
impl Tools {
    #[tool(
        name = "deck_boards",
        title = "List Deck boards",
        description = "List the Deck boards the user can see, with their ids.",
        input_schema = input::<NoArgs>(),
        output_schema = output::<BoardList>(),
        annotations(title = "List Deck boards", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
    )]
    async fn deck_boards(&self, caller: Caller, Parameters(_): Parameters<NoArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let raw: Vec<RawBoard> = s
            .send_json(s.ocs_request(http::Method::GET, deck_url(s, ["boards"])), "listing boards")
            .await?;
        let boards: Vec<BoardInfo> = raw
            .into_iter()
            .filter(|b| b.deleted_at.unwrap_or(0) == 0)
            .map(|b| BoardInfo {
                board_id: b.id,
                title: b.title,
                color: b.color,
                archived: b.archived,
            })
            .collect();
        let text = boards
            .iter()
            .map(|b| format!("- {} (board_id {})", b.title, b.board_id))
            .collect::<Vec<_>>()
            .join("\n");
        Output::new(format!("{} board(s):\n{text}", boards.len()), &BoardList { boards })
    }

    #[tool(
        name = "deck_board",
        title = "A Deck board",
        description = "One Deck board's stacks with their cards (ids, titles, descriptions, due dates).",
        input_schema = input::<DeckBoardArgs>(),
        output_schema = output::<Board>(),
        annotations(title = "A Deck board", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
    )]
    async fn deck_board(&self, caller: Caller, Parameters(a): Parameters<DeckBoardArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let mut raw = stacks(s, a.board_id.0).await?;
        raw.sort_by_key(|st| st.order);
        let stacks: Vec<Stack> = raw
            .into_iter()
            .map(|st| {
                let mut cards: Vec<Card> = st
                    .cards
                    .unwrap_or_default()
                    .into_iter()
                    .map(|c| Card {
                        card_id: c.id,
                        title: c.title,
                        description: c.description.filter(|d| !d.is_empty()),
                        duedate: c.duedate,
                        order: c.order,
                    })
                    .collect();
                cards.sort_by_key(|c| c.order);
                Stack {
                    stack_id: st.id,
                    title: st.title,
                    order: st.order,
                    cards,
                }
            })
            .collect();
        let mut text = format!("Board {} has {} stack(s):", a.board_id.0, stacks.len());
        for st in &stacks {
            text.push_str(&format!("\n{} (stack_id {}):", st.title, st.stack_id));
            for c in &st.cards {
                text.push_str(&format!("\n  - {} (card_id {})", c.title, c.card_id));
            }
        }
        Output::new(
            text,
            &Board {
                board_id: a.board_id.0,
                stacks,
            },
        )
    }

    #[tool(
        name = "deck_create_card",
        title = "Create a Deck card",
        description = "Create a card in a stack of a Deck board.",
        input_schema = input::<DeckCreateCardArgs>(),
        output_schema = output::<CardCreated>(),
        annotations(title = "Create a Deck card", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false),
    )]
    async fn deck_create_card(&self, caller: Caller, Parameters(a): Parameters<DeckCreateCardArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let title = args::title(&a.title, "title", 255)?;
        let description = args::optional_text(a.description.as_deref(), "description", 20_000)?;
        let duedate = match a.duedate.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
            Some(d) => Some(
                When::parse(d, "duedate")?
                    .start_instant()
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            ),
            None => None,
        };
        let (b, st) = (a.board_id.0.to_string(), a.stack_id.0.to_string());
        let mut body = serde_json::json!({ "title": title, "type": "plain", "order": 999 });
        if let Some(d) = &description {
            body["description"] = d.clone().into();
        }
        if let Some(d) = &duedate {
            body["duedate"] = d.clone().into();
        }
        let url = deck_url(s, ["boards", b.as_str(), "stacks", st.as_str(), "cards"]);
        let card: RawCard = s
            // Each POST creates another card: a lost answer is unconfirmed, never retryable.
            .send_json_once(s.ocs_request(http::Method::POST, url).json(&body), "creating the card")
            .await?;
        // Read the card back: the answer to the POST is what Deck meant to store; the card as
        // Deck holds it now is what the user is told about.
        let did = format!("Nextcloud accepted creating card {} in stack {}", card.id, a.stack_id.0);
        let back = match card_now(s, a.board_id.0, a.stack_id.0, card.id).await {
            Ok(Some(back)) => back,
            Ok(None) => return Err(Error::Unconfirmed(format!("{did}, but no such card is in that stack now"))),
            Err(e) => return Err(Error::unconfirmed(&did, e)),
        };
        if let Some(other) = back.stack_id.filter(|st| *st != a.stack_id.0) {
            return Err(Error::Unconfirmed(format!("{did}, but the card is in stack {other} now")));
        }
        let out = CardCreated {
            board_id: a.board_id.0,
            stack_id: a.stack_id.0,
            card_id: back.id,
            title: back.title,
        };
        Output::new(
            format!(
                "Created card \"{}\" (card_id {}) in stack {}.",
                out.title, out.card_id, out.stack_id
            ),
            &out,
        )
    }

    #[tool(
        name = "deck_move_card",
        title = "Move a Deck card",
        description = "Move a card to another stack of the same board.",
        input_schema = input::<DeckMoveCardArgs>(),
        output_schema = output::<CardMoved>(),
        annotations(title = "Move a Deck card", read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false),
    )]
    async fn deck_move_card(&self, caller: Caller, Parameters(a): Parameters<DeckMoveCardArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let raw = stacks(s, a.board_id.0).await?;
        if !raw.iter().any(|st| st.id == a.stack_id.0) {
            return Err(Error::invalid(format!(
                "stack {} is not on board {}; see deck_board for its stacks",
                a.stack_id.0, a.board_id.0
            )));
        }
        let from = raw
            .iter()
            .find(|st| st.cards.as_deref().unwrap_or_default().iter().any(|c| c.id == a.card_id.0))
            .map(|st| st.id)
            .ok_or(Error::NotFound)?;
        // The target goes in the URL as well as in the body. Deck's reorder takes the stack
        // from the merged request parameters, and on a Nextcloud with user_oidc a request that
        // no session cookie logged in has them merged route-last (user_oidc reads a parameter
        // while booting, so the JSON body is decoded before routing): there the URL's stack wins
        // and a URL naming the card's current stack answers 200 with nothing moved.
        let (b, t, c) = (a.board_id.0.to_string(), a.stack_id.0.to_string(), a.card_id.0.to_string());
        let url = deck_url(s, ["boards", b.as_str(), "stacks", t.as_str(), "cards", c.as_str(), "reorder"]);
        let body = serde_json::json!({ "order": 0, "stackId": a.stack_id.0 });
        let answer = s
            .send_text(s.ocs_request(http::Method::PUT, url).json(&body), "moving the card")
            .await?;
        // Where the card is now. Deck answers a reorder with the cards of the stack it moved the
        // card to, read from its database after the move (CardService::reorder); only when that
        // answer does not show the card is the board read again.
        let did = format!("Nextcloud accepted moving card {} to stack {}", a.card_id.0, a.stack_id.0);
        let listed = serde_json::from_str::<Vec<RawCard>>(&answer)
            .ok()
            .and_then(|cards| cards.into_iter().find(|card| card.id == a.card_id.0))
            .and_then(|card| card.stack_id);
        let now = match listed {
            Some(st) => Some(st),
            None => stack_of(s, a.board_id.0, a.card_id.0)
                .await
                .map_err(|e| Error::unconfirmed(&did, e))?,
        };
        match now {
            Some(st) if st == a.stack_id.0 => {}
            Some(st) if st == from => {
                return Err(Error::Unconfirmed(format!("{did}, but the card is still in stack {from}")));
            }
            Some(st) => return Err(Error::Unconfirmed(format!("{did}, but the card is in stack {st} now"))),
            None => {
                return Err(Error::Unconfirmed(format!(
                    "{did}, but the card is no longer on board {}",
                    a.board_id.0
                )));
            }
        }
        let out = CardMoved {
            board_id: a.board_id.0,
            card_id: a.card_id.0,
            from_stack_id: from,
            stack_id: a.stack_id.0,
        };
        Output::new(
            format!("Moved card {} from stack {from} to stack {}.", out.card_id, out.stack_id),
            &out,
        )
    }
}

#[derive(Deserialize)]
struct RawBoard {
    id: u64,
    title: String,
    #[serde(default)]
    color: Option<String>,
    #[serde(default)]
    archived: bool,
    #[serde(default, rename = "deletedAt")]
    deleted_at: Option<i64>,
}

#[derive(Deserialize)]
struct RawStack {
    id: u64,
    title: String,
    #[serde(default)]
    order: i64,
    #[serde(default)]
    cards: Option<Vec<RawCard>>,
}

#[derive(Deserialize)]
struct RawCard {
    id: u64,
    title: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    duedate: Option<String>,
    #[serde(default)]
    order: i64,
    #[serde(default, rename = "stackId")]
    stack_id: Option<u64>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct BoardInfo {
    pub board_id: u64,
    pub title: String,
    pub color: Option<String>,
    pub archived: bool,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct BoardList {
    pub boards: Vec<BoardInfo>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Card {
    pub card_id: u64,
    pub title: String,
    pub description: Option<String>,
    pub duedate: Option<String>,
    pub order: i64,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Stack {
    pub stack_id: u64,
    pub title: String,
    pub order: i64,
    pub cards: Vec<Card>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Board {
    pub board_id: u64,
    pub stacks: Vec<Stack>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct CardCreated {
    pub board_id: u64,
    pub stack_id: u64,
    pub card_id: u64,
    pub title: String,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct CardMoved {
    pub board_id: u64,
    pub card_id: u64,
    pub from_stack_id: u64,
    pub stack_id: u64,
}

fn deck_url<'a>(s: &Session<'_>, tail: impl IntoIterator<Item = &'a str>) -> url::Url {
    s.url(["index.php", "apps", "deck", "api", "v1.0"].into_iter().chain(tail))
}

/// The card as Deck holds it now, read through the stack it should be in; `None` when Deck
/// says there is no such card there (Deck answers 403 or 404; a stand-in stricter about the
/// URL's stack too).
async fn card_now(s: &Session<'_>, board_id: u64, stack_id: u64, card_id: u64) -> Result<Option<RawCard>, Error> {
    let (b, st, c) = (board_id.to_string(), stack_id.to_string(), card_id.to_string());
    let url = deck_url(s, ["boards", b.as_str(), "stacks", st.as_str(), "cards", c.as_str()]);
    match s.send_json(s.ocs_request(http::Method::GET, url), "reading the card back").await {
        Ok(card) => Ok(Some(card)),
        Err(Error::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The stack a card is in now, from one listing of its board; `None` when it is not on it.
async fn stack_of(s: &Session<'_>, board_id: u64, card_id: u64) -> Result<Option<u64>, Error> {
    Ok(stacks(s, board_id)
        .await?
        .into_iter()
        .find(|st| st.cards.as_deref().unwrap_or_default().iter().any(|c| c.id == card_id))
        .map(|st| st.id))
}

async fn stacks(s: &Session<'_>, board_id: u64) -> Result<Vec<RawStack>, Error> {
    let id = board_id.to_string();
    s.send_json(
        s.ocs_request(http::Method::GET, deck_url(s, ["boards", id.as_str(), "stacks"])),
        "reading the board",
    )
    .await
}
