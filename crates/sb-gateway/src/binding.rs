//! Which HTTP binding a request is for, read once from its method and path: the Agent
//! Card, JSON-RPC (a POST to an agent's base or its `/a2a`, where the TCK and some clients
//! post), or HTTP+JSON (everything else). The router, the metrics and the error bodies
//! of requests that never reach a binding (too large, unauthenticated) all go by it.

use axum::http::Method;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    Card,
    JsonRpc,
    Rest,
}

impl Binding {
    /// The binding of `method` on `path`, whether the path names an agent
    /// (`/agents/{name}/…`) or the default agent at the root.
    pub fn of(method: &Method, path: &str) -> Binding {
        // Read without collecting: this runs for every request.
        let mut segments = path.split('/').filter(|s| !s.is_empty());
        let mut next = || segments.next();
        let head = [next(), next(), next(), next(), next()];
        let under_agent = match head {
            [Some("agents"), Some(_), third, fourth, fifth] => [third, fourth, fifth],
            [first, second, third, ..] => [first, second, third],
        };
        match under_agent {
            [
                Some(".well-known"),
                Some("agent-card.json" | "agent.json"),
                None,
            ] => Binding::Card,
            [Some("a2a"), None, _] | [None, ..] if method == Method::POST => Binding::JsonRpc,
            _ => Binding::Rest,
        }
    }

    /// The metrics' and traces' label.
    pub fn label(self) -> &'static str {
        match self {
            Binding::Card => "card",
            Binding::JsonRpc => "jsonrpc",
            Binding::Rest => "rest",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binding_is_read_from_the_method_and_path() {
        let post = Method::POST;
        let get = Method::GET;
        for (method, path, binding) in [
            (&get, "/.well-known/agent-card.json", Binding::Card),
            (&get, "/agents/echo/.well-known/agent.json", Binding::Card),
            (
                &get,
                "/agents/echo/.well-known/agent-card.json/",
                Binding::Card,
            ),
            (&post, "/", Binding::JsonRpc),
            (&post, "", Binding::JsonRpc),
            (&post, "/a2a", Binding::JsonRpc),
            (&post, "/a2a/", Binding::JsonRpc),
            (&post, "/agents/echo", Binding::JsonRpc),
            (&post, "/agents/echo/", Binding::JsonRpc),
            (&post, "/agents/echo/a2a", Binding::JsonRpc),
            (&get, "/agents/echo/a2a", Binding::Rest),
            (&post, "/agents/echo/message:send", Binding::Rest),
            (&post, "/message:send", Binding::Rest),
            (&post, "/agents/echo/x/a2a", Binding::Rest),
            (&post, "/v1/message:send", Binding::Rest),
            (&get, "/agents/echo/tasks/t1", Binding::Rest),
            (&post, "/agents", Binding::Rest),
            (&get, "/.well-known/agent-card.json/x", Binding::Rest),
        ] {
            assert_eq!(Binding::of(method, path), binding, "{method} {path}");
        }
    }
}
