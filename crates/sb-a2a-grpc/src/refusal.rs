//! A server's refusal read back (for clients): the `tonic::Status` an A2A server sent,
//! as the [`A2AError`] it stands for — the reverse of [`crate::status::to_status`].
//!
//! The `google.rpc.ErrorInfo` of domain `a2a-protocol.org` names the kind by its
//! `reason`, and its metadata the task (`taskId`) and whether to retry (`retryable`); a
//! `google.rpc.BadRequest` gives the field violations. A status without a known reason
//! (a server that sends no details) is read from its code alone, where the code means a
//! refusal; a status about the call not getting through (UNAVAILABLE, DEADLINE_EXCEEDED,
//! CANCELLED, UNKNOWN, …, or an HTTP answer that was not gRPC) is no A2A error: `None`.

use sb_protocol::{A2AError, ErrorKind};
use tonic::Code;
use tonic_types::StatusExt;

use crate::status::DOMAIN;

/// The A2A error `status` carries, or `None` when it says the call did not get through.
pub fn error_of(status: &tonic::Status) -> Option<A2AError> {
    let details = status.get_error_details();
    let info = details.error_info().filter(|info| info.domain == DOMAIN);
    let named = info.and_then(|info| ErrorKind::from_reason(&info.reason));
    let kind = match named {
        Some(kind) => kind,
        None => kind_of_code(status)?,
    };
    let mut err = A2AError::new(kind, status.message());
    if let Some(info) = info {
        if let Some(task_id) = info.metadata.get("taskId") {
            err = err.with_task(task_id.clone());
        }
        if let Some(retryable) = info.metadata.get("retryable").and_then(|r| r.parse().ok()) {
            err = err.retryable(retryable);
        }
    }
    if let Some(bad) = details.bad_request() {
        err.field_violations = bad
            .field_violations
            .iter()
            .map(|v| (v.field.clone(), v.description.clone()))
            .collect();
    }
    Some(err)
}

/// The kind a bare code most likely means on the A2A service, if it is a refusal.
fn kind_of_code(status: &tonic::Status) -> Option<ErrorKind> {
    // tonic's own status for an HTTP answer without `grpc-status` (a wrong address, a
    // proxy's error page): nothing an A2A server said.
    if status.message().starts_with("grpc-status header missing") {
        return None;
    }
    Some(match status.code() {
        Code::InvalidArgument => ErrorKind::InvalidParams,
        Code::NotFound => ErrorKind::TaskNotFound,
        Code::FailedPrecondition | Code::Unimplemented => ErrorKind::UnsupportedOperation,
        Code::Unauthenticated | Code::PermissionDenied => ErrorKind::Unauthenticated,
        Code::ResourceExhausted => ErrorKind::ResourceExhausted,
        Code::OutOfRange => ErrorKind::PayloadTooLarge,
        Code::Internal => ErrorKind::Internal,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::to_status;

    #[test]
    fn every_kind_survives_the_round_trip() {
        for kind in ErrorKind::ALL {
            let sent = A2AError::new(kind, format!("about {kind:?}"))
                .with_task("t1")
                .retryable(true);
            assert_eq!(error_of(&to_status(&sent)), Some(sent), "{kind:?}");
        }
        let invalid = A2AError::invalid_field("message.parts", "is empty");
        let read = error_of(&to_status(&invalid)).unwrap();
        assert_eq!(read.field_violations, invalid.field_violations);
        assert!(!read.retryable);
    }

    #[test]
    fn bare_codes_are_read_or_left_to_the_transport() {
        let not_found = error_of(&tonic::Status::not_found("no such task")).unwrap();
        assert_eq!(not_found.kind, ErrorKind::TaskNotFound);
        assert_eq!(not_found.message, "no such task");
        assert_eq!(
            error_of(&tonic::Status::unavailable("tcp connect error")),
            None
        );
        let not_grpc = tonic::Status::unimplemented(
            "grpc-status header missing, mapped from HTTP status code 404",
        );
        assert_eq!(error_of(&not_grpc), None);
    }
}
