//! The Lua scripts, loaded once per process and run with EVALSHA (`redis::Script` falls
//! back to loading the script when the server does not know it, e.g. after a restart).

use std::sync::LazyLock;

use ::redis::Script;

pub(super) static COMMIT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/commit.lua")));
pub(super) static DELETE_TASK: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/delete.lua")));
pub(super) static ADVANCE_CURSOR: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/advance_cursor.lua")));
pub(super) static DELETE_PUSH: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/delete_push.lua")));
pub(super) static TAKE_DEAD: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/take_dead.lua")));
pub(super) static SIGNING_KEY: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/signing_key.lua")));
pub(super) static DOC_SWAP: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/doc_swap.lua")));
