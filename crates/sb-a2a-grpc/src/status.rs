//! A2A errors as gRPC statuses (spec §10.6, digest §6): the code from the A2A mapping,
//! a `google.rpc.ErrorInfo` detail (reason, domain `a2a-protocol.org`, metadata) and,
//! for invalid fields, a `google.rpc.BadRequest` with the field violations.

use std::collections::HashMap;

use sb_protocol::{A2AError, ErrorKind};
use tonic::Code;
use tonic_types::{ErrorDetails, FieldViolation, StatusExt};

/// The domain of every A2A ErrorInfo.
pub const DOMAIN: &str = "a2a-protocol.org";

/// The gRPC code of an error kind, read from the one mapping in `sb-protocol` (which
/// also names it in REST bodies), so the two bindings cannot disagree.
pub fn code(kind: ErrorKind) -> Code {
    match kind.grpc_status() {
        "INVALID_ARGUMENT" => Code::InvalidArgument,
        "NOT_FOUND" => Code::NotFound,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        "UNAUTHENTICATED" => Code::Unauthenticated,
        "RESOURCE_EXHAUSTED" => Code::ResourceExhausted,
        "OUT_OF_RANGE" => Code::OutOfRange,
        _ => Code::Internal,
    }
}

/// The status for an A2A error, details included.
pub fn to_status(err: &A2AError) -> tonic::Status {
    let mut metadata = HashMap::new();
    if let Some(task_id) = &err.task_id {
        metadata.insert("taskId".to_owned(), task_id.clone());
    }
    metadata.insert("retryable".to_owned(), err.retryable.to_string());
    let mut details = ErrorDetails::with_error_info(err.kind.reason(), DOMAIN, metadata);
    if !err.field_violations.is_empty() {
        let violations = err
            .field_violations
            .iter()
            .map(|(field, description)| FieldViolation::new(field, description))
            .collect::<Vec<_>>();
        details.set_bad_request(violations);
    }
    tonic::Status::with_error_details(code(err.kind), err.message.clone(), details)
}

/// The ErrorInfo reason of a status, if it carries one (for clients and tests).
pub fn reason(status: &tonic::Status) -> Option<String> {
    status
        .get_error_details()
        .error_info()
        .map(|i| i.reason.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_not_found_carries_error_info() {
        let status = to_status(&A2AError::task_not_found("t1"));
        assert_eq!(status.code(), Code::NotFound);
        let details = status.get_error_details();
        let info = details.error_info().unwrap();
        assert_eq!(info.reason, "TASK_NOT_FOUND");
        assert_eq!(info.domain, DOMAIN);
        assert_eq!(info.metadata["taskId"], "t1");
        assert!(details.bad_request().is_none());
    }

    #[test]
    fn field_violations_become_bad_request() {
        let status = to_status(&A2AError::invalid_field("message.parts", "is empty"));
        assert_eq!(status.code(), Code::InvalidArgument);
        let details = status.get_error_details();
        let bad = details.bad_request().unwrap();
        assert_eq!(bad.field_violations[0].field, "message.parts");
        assert_eq!(reason(&status).as_deref(), Some("INVALID_PARAMS"));
    }

    #[test]
    fn codes_follow_the_a2a_mapping() {
        assert_eq!(code(ErrorKind::TaskNotCancelable), Code::FailedPrecondition);
        assert_eq!(code(ErrorKind::InvalidAgentResponse), Code::Internal);
        assert_eq!(code(ErrorKind::Unauthenticated), Code::Unauthenticated);
        assert_eq!(
            code(ErrorKind::ContentTypeNotSupported),
            Code::InvalidArgument
        );
    }
}
