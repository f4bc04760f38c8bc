//! The credentials a client sends, placed as the card's security schemes say: a bearer
//! token in `Authorization` for an HTTP bearer scheme, an API key in the header, query
//! parameter or cookie an API-key scheme names, and any custom headers as given.

use sb_protocol::card::{AgentCard, SecurityScheme};

/// What a client holds to authenticate with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Credentials {
    pub bearer: Option<String>,
    pub api_key: Option<String>,
    /// Sent as they are with every call.
    pub headers: Vec<(String, String)>,
}

/// Where each credential goes for one agent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    pub headers: Vec<(String, String)>,
    pub query: Vec<(String, String)>,
}

impl Credentials {
    pub fn is_empty(&self) -> bool {
        self.bearer.is_none() && self.api_key.is_none() && self.headers.is_empty()
    }

    /// Where the credentials go for an agent with `card`. A bearer token goes in
    /// `Authorization` whatever the card says (a server that wants none ignores it); an
    /// API key goes where the card's API-key scheme puts it, else in `X-API-Key`.
    pub fn placed_for(&self, card: Option<&AgentCard>) -> Placement {
        let mut placement = Placement {
            headers: self.headers.clone(),
            query: Vec::new(),
        };
        if let Some(token) = &self.bearer {
            placement
                .headers
                .push(("authorization".into(), format!("Bearer {token}")));
        }
        if let Some(key) = &self.api_key {
            let scheme = card.into_iter().flat_map(|c| c.security_schemes.values());
            let declared = scheme.into_iter().find_map(|s| match s {
                SecurityScheme::ApiKeySecurityScheme { location, name, .. } => {
                    Some((location.to_ascii_lowercase(), name.clone()))
                }
                _ => None,
            });
            match declared {
                Some((location, name)) if location == "query" => {
                    placement.query.push((name, key.clone()));
                }
                Some((location, name)) if location == "cookie" => {
                    placement
                        .headers
                        .push(("cookie".into(), format!("{name}={key}")));
                }
                Some((_, name)) => placement.headers.push((name, key.clone())),
                None => placement.headers.push(("x-api-key".into(), key.clone())),
            }
        }
        placement
    }
}

impl Placement {
    /// `request` with the credentials on it.
    pub fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let request = self
            .headers
            .iter()
            .fold(request, |r, (name, value)| r.header(name, value));
        match self.query.is_empty() {
            true => request,
            false => request.query(&self.query),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn card(schemes: serde_json::Value) -> AgentCard {
        serde_json::from_value(serde_json::json!({
            "name": "a", "description": "d", "version": "1", "capabilities": {},
            "supportedInterfaces": [], "securitySchemes": schemes,
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": []
        }))
        .unwrap()
    }

    #[test]
    fn an_api_key_goes_where_the_card_says() {
        let credentials = Credentials {
            bearer: Some("t".into()),
            api_key: Some("k".into()),
            headers: vec![("x-tenant".into(), "acme".into())],
        };
        let in_query = card(serde_json::json!({
            "key": {"apiKeySecurityScheme": {"location": "query", "name": "api_key"}}
        }));
        let placed = credentials.placed_for(Some(&in_query));
        assert_eq!(placed.query, vec![("api_key".into(), "k".into())]);
        assert_eq!(
            placed.headers,
            vec![
                ("x-tenant".into(), "acme".into()),
                ("authorization".into(), "Bearer t".into())
            ]
        );
        let in_header = card(serde_json::json!({
            "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}}
        }));
        let placed = credentials.placed_for(Some(&in_header));
        assert!(placed.headers.contains(&("X-Key".into(), "k".into())));
        let undeclared = credentials.placed_for(None);
        assert!(
            undeclared
                .headers
                .contains(&("x-api-key".into(), "k".into()))
        );
    }
}
