//! Generates the internal API from `proto/` with protox (a Rust protobuf compiler), so
//! building needs no system `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let file = root.join("switchboard/internal/v1/internal.proto");
    println!("cargo:rerun-if-changed={}", file.display());
    let descriptors = protox::compile([&file], [&root])?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
