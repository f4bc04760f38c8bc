//! The public A2A 1.0 gRPC binding's API (`lf.a2a.v1.A2AService`), generated from the
//! vendored `proto/lf/a2a/v1/a2a.proto`, and the bridges between it and our serde model
//! (`sb-protocol`). No I/O: the gateway serves it (`sb_gateway::grpc`), tests and other
//! clients call it with the generated client.
//!
//! # Layout
//! - [`pb`]: the generated prost messages, tonic server and client, and pbjson serde
//!   impls (the ProtoJSON mapping).
//! - [`wkt`]: the well-known types they use; `Struct` and `Value` our own, which encode
//!   their fields in key order.
//! - [`convert`]: prost message ↔ model, through the one JSON form both speak.
//! - [`status`]: [`sb_protocol::A2AError`] ↔ `tonic::Status` with `google.rpc` details.
//! - [`refusal`]: a server's `tonic::Status` read back into the `A2AError` (clients).

pub mod pb {
    #![allow(clippy::all, unreachable_pub, missing_debug_implementations)]
    tonic::include_proto!("lf.a2a.v1");
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.serde.rs"));
}

pub mod convert;
pub mod refusal;
pub mod status;
pub mod wkt;

/// The full gRPC service name, as it appears in method paths.
pub const SERVICE_NAME: &str = "lf.a2a.v1.A2AService";
