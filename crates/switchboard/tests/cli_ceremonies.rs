//! `switchboard ceremonies` (the real binary) against the all-in-one serving ceremonies:
//! a key is required; an agent's key creates from a YAML file and owns the ceremony; it
//! fires now and its run shows the task; pause and resume change `enabled`; another
//! agent's key is refused; the admin token deletes.

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness; Drop reaps the child

#[path = "support/ceremonies.rs"]
mod ceremonies;
#[path = "support/cli.rs"]
mod cli_support;
#[path = "support/process.rs"]
mod process;

use ceremonies::{ADMIN, PEN_KEY, QUINN_KEY};
use cli_support::{cli, field, json, stderr, stdout};

#[tokio::test]
async fn ceremonies_are_listed_created_fired_paused_and_deleted_with_the_right_keys() {
    let server = ceremonies::start(&[], &[]).await;
    let url = ["--url", server.base.as_str()];
    let quinn = ["--api-key", QUINN_KEY];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("digest.yaml");
    std::fs::write(
        &file,
        "id: quinn.digest\nname: Daily digest\nschedule: \"0 9 * * *\"\nskill: digest\n\
         targets: [quinn]\nmessage: echo the digest\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();

    let out = cli(&[&["ceremonies", "list"][..], &url].concat());
    assert_eq!(
        out.status.code(),
        Some(4),
        "a key is required: {}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("X-API-Key"), "{}", stderr(&out));

    let out = cli(&[&["ceremonies", "create", file][..], &url, &quinn].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(field(&text, "Ceremony"), "quinn.digest");
    assert_eq!(
        field(&text, "Created by"),
        "quinn",
        "the key stamps its agent"
    );
    assert_eq!(field(&text, "Enabled"), "true");

    let out = cli(&[
        &["ceremonies", "list", "-o", "json", "--token", ADMIN][..],
        &url,
    ]
    .concat());
    let listed = json(&out);
    let ceremony = &listed["ceremonies"][0];
    assert_eq!(ceremony["id"], "quinn.digest", "{listed}");
    assert_eq!(ceremony["createdBy"], "quinn");

    let out = cli(&[&["ceremonies", "run", "quinn.digest"][..], &url, &quinn].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(field(&text, "Trigger"), "manual", "{text}");
    assert!(field(&text, "Target").starts_with("quinn task "), "{text}");
    let out = cli(&[
        &["ceremonies", "runs", "quinn.digest", "--json"][..],
        &url,
        &quinn,
    ]
    .concat());
    let runs = json(&out);
    let run = &runs["runs"][0];
    assert_eq!(run["trigger"], "manual", "{runs}");
    assert!(run["tasks"][0]["taskId"].is_string(), "{runs}");

    let pen = ["--api-key", PEN_KEY];
    let out = cli(&[
        &["ceremonies", "pause", "quinn.digest", "--json"][..],
        &url,
        &pen,
    ]
    .concat());
    assert_eq!(
        out.status.code(),
        Some(4),
        "another agent's key: {}",
        stdout(&out)
    );
    assert!(
        json(&out)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("belongs to quinn")
    );

    let out = cli(&[&["ceremonies", "pause", "quinn.digest"][..], &url, &quinn].concat());
    assert_eq!(field(&stdout(&out), "Enabled"), "false");
    let out = cli(&[&["ceremonies", "resume", "quinn.digest"][..], &url, &quinn].concat());
    assert_eq!(field(&stdout(&out), "Enabled"), "true");

    let out = cli(&[
        &["ceremonies", "delete", "quinn.digest", "--token", ADMIN][..],
        &url,
    ]
    .concat());
    assert_eq!(stdout(&out), "Deleted: quinn.digest\n", "{}", stderr(&out));
    let out = cli(&[
        &["ceremonies", "list", "--json", "--token", ADMIN][..],
        &url,
    ]
    .concat());
    assert_eq!(json(&out)["ceremonies"].as_array().unwrap().len(), 0);
}
