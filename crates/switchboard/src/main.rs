/// mimalloc: the request path allocates many small, short-lived objects (JSON values,
/// records, events) across threads, which glibc's malloc serves slowly (the figures are
/// in bench/profile.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // No transparent huge pages: mimalloc asks for them on its arenas, and a server
    // holding many idle connections then pays whole 2 MiB pages for scattered small
    // objects (bench/profile.md). Best effort: without it we only use more memory.
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    switchboard::main()
}
