//! Generates the public A2A gRPC API from the vendored `proto/lf/a2a/v1/a2a.proto` with
//! protox (no system `protoc`): prost messages and the tonic service, plus pbjson serde
//! impls that follow the ProtoJSON mapping, so a message converts to our serde model
//! through JSON without a hand-written mapping per field.

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
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
    // pbjson-types: the well-known types (Struct, Timestamp, …) with ProtoJSON serde
    // (pbjson-build maps .google.protobuf there by itself).
    tonic_prost_build::configure()
        // Without this prost maps .google.protobuf to prost-types itself.
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(descriptors)?;
    pbjson_build::Builder::new()
        .register_descriptors(&encoded)?
        // Our model may carry fields a proto message lacks; drop them, do not fail.
        .ignore_unknown_fields()
        .build(&[".lf.a2a.v1"])?;
    Ok(())
}
