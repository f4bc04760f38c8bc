//! Who is calling `/api/ceremonies`, by the `X-API-Key` they send (the fleet guide's
//! header): the admin token is the admin key; an agent's key (`api_keys` of its
//! definition) makes the call that agent's. Keys are compared in constant time, each
//! against every candidate, so the answer's timing tells nothing of which one matched.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use sb_fleet::ceremonies::book::Caller;
use sb_registry::Fleet;
use subtle::ConstantTimeEq;

/// The header the key comes in.
pub const API_KEY_HEADER: &str = "x-api-key";

fn unauthorized(message: &str) -> Box<Response> {
    Box::new(sb_registry::http::error(
        StatusCode::UNAUTHORIZED,
        message,
        None,
    ))
}

/// The caller whose key `headers` carry, among the registered agents of `fleet`; a 401
/// saying what to send otherwise.
pub fn caller(
    admin_token: Option<&str>,
    fleet: &Fleet,
    headers: &HeaderMap,
) -> Result<Caller, Box<Response>> {
    let agents = fleet.agents.iter().map(|(name, agent)| {
        let keys = &agent.registration.definition.api_keys;
        (name.as_str(), keys.as_slice())
    });
    caller_among(admin_token, agents, headers)
}

/// The caller whose key `headers` carry, among `agents` (name, keys).
fn caller_among<'a>(
    admin_token: Option<&str>,
    agents: impl Iterator<Item = (&'a str, &'a [String])>,
    headers: &HeaderMap,
) -> Result<Caller, Box<Response>> {
    let Some(presented) = headers.get(API_KEY_HEADER) else {
        return Err(unauthorized(
            "send your key in the X-API-Key header: an agent's own key (api_keys of its definition) or the admin token",
        ));
    };
    let presented = presented.as_bytes();
    let admin = admin_token.is_some_and(|token| bool::from(token.as_bytes().ct_eq(presented)));
    let mut matching = Vec::new();
    for (name, keys) in agents {
        let mut matched = false;
        for key in keys {
            matched |= bool::from(key.as_bytes().ct_eq(presented));
        }
        if matched {
            matching.push(name.to_owned());
        }
    }
    if admin {
        return Ok(Caller::Admin);
    }
    match matching.len() {
        1 => Ok(Caller::Agent(matching.remove(0))),
        0 => Err(unauthorized(
            "this X-API-Key is neither the admin token nor the key of a registered agent",
        )),
        _ => Err(unauthorized(
            "this X-API-Key belongs to several agents, so it identifies none: give each agent keys of its own",
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn agents(agents: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        let owned = agents.iter().map(|(name, keys)| {
            let keys = keys.iter().map(|k| (*k).to_owned()).collect();
            ((*name).to_owned(), keys)
        });
        owned.collect()
    }

    fn caller(
        admin: Option<&str>,
        agents: &[(String, Vec<String>)],
        headers: &HeaderMap,
    ) -> Result<Caller, Box<Response>> {
        let listed = agents.iter().map(|(n, k)| (n.as_str(), k.as_slice()));
        caller_among(admin, listed, headers)
    }

    fn with_key(key: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(API_KEY_HEADER, key.parse().unwrap());
        headers
    }

    #[test]
    fn a_key_names_the_admin_or_its_one_agent() {
        let fleet = agents(&[
            ("quinn", &["quinn-key-0123456789"]),
            ("pen", &["pen-key-0123456789ab", "shared-key-012345678"]),
            ("ava", &["shared-key-012345678"]),
        ]);
        let admin = Some("admin-token-0123456789");
        let who = |key: &str| caller(admin, &fleet, &with_key(key));
        assert_eq!(who("admin-token-0123456789").unwrap(), Caller::Admin);
        assert_eq!(
            who("quinn-key-0123456789").unwrap(),
            Caller::Agent("quinn".into())
        );
        assert_eq!(
            who("pen-key-0123456789ab").unwrap(),
            Caller::Agent("pen".into())
        );
        for refused in ["nobody's-key-0123456", "shared-key-012345678", ""] {
            let answer = who(refused).unwrap_err();
            assert_eq!(answer.status(), StatusCode::UNAUTHORIZED, "{refused}");
        }
        let missing = caller(admin, &fleet, &HeaderMap::new()).unwrap_err();
        assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
        let unset_admin = caller(None, &fleet, &with_key("")).unwrap_err();
        assert_eq!(
            unset_admin.status(),
            StatusCode::UNAUTHORIZED,
            "no admin token set: an empty key is nobody's"
        );
    }
}
