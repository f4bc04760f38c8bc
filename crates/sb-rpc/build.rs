//! Generates the internal API from `proto/` with protox (a Rust protobuf compiler), so
//! building needs no system `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read when the script runs, not baked in when it is compiled: checkouts sharing a
    // target directory share this script's binary, and each must read its own protos.
    let root = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let file = root.join("switchboard/internal/v1/internal.proto");
    println!("cargo:rerun-if-changed={}", file.display());
    let descriptors = protox::compile([&file], [&root])?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
