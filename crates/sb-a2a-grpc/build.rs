//! Generates the public A2A gRPC API from the vendored `proto/lf/a2a/v1/a2a.proto` with
//! protox (no system `protoc`): prost messages and the tonic service, plus pbjson serde
//! impls that follow the ProtoJSON mapping, so a message converts to our serde model
//! through JSON without a hand-written mapping per field.

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read when the script runs, not baked in when it is compiled: checkouts sharing a
    // target directory share this script's binary, and each must read its own protos.
    let proto = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let file = proto.join("lf/a2a/v1/a2a.proto");
    println!("cargo:rerun-if-changed={}", file.display());
    println!(
        "cargo:rerun-if-changed={}",
        proto.join("third_party").display()
    );
    // Imports included: prost looks at referenced messages (e.g. to derive Eq). Only
    // lf.a2a.v1 is used; the google/api code generated alongside is never included.
    let descriptors = protox::Compiler::new([proto.clone(), proto.join("third_party")])?
        .include_imports(true)
        .open_files([&file])?
        .file_descriptor_set();
    let encoded = descriptors.encode_to_vec();
    // pbjson-types: the well-known types (Timestamp, Empty, …) with ProtoJSON serde,
    // except Struct, Value and ListValue: ours (src/wkt.rs), whose fields encode in key
    // order. prost takes the longest matching path, so these win over .google.protobuf.
    let mut config = tonic_prost_build::configure()
        // Without this prost maps .google.protobuf to prost-types itself.
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", "::pbjson_types");
    for name in ["Struct", "Value", "ListValue"] {
        config = config.extern_path(
            format!(".google.protobuf.{name}"),
            format!("crate::wkt::{name}"),
        );
    }
    config.compile_fds(descriptors)?;
    // The serde impls name only lf.a2a.v1's own types and enums (a field's message type
    // is inferred), so pbjson-build needs no extern paths for the well-known types.
    pbjson_build::Builder::new()
        .register_descriptors(&encoded)?
        // Our model may carry fields a proto message lacks; drop them, do not fail.
        .ignore_unknown_fields()
        .build(&[".lf.a2a.v1"])?;
    Ok(())
}
