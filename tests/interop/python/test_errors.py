"""A2A errors as surfaced by the official Python client."""

import uuid

import grpc
import httpx
import pytest

from a2a.types import GetTaskRequest, TaskNotFoundError, UnsupportedOperationError
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP, A2AError

from interop import make_client, new_text, send, state_name, user_message


# REST 0.3 status codes were never specified; 1.0.1's table (400) and the
# 0.3-era Python SDK's (501 for unsupported, 409 for not-cancelable) both occur.
REST_03_STATUS = {404: {404}, 400: {400, 409, 501}}
# The A2A errors these tests provoke, by HTTP status, as gRPC codes (A2A 1.0.1 table).
GRPC_CODE = {404: grpc.StatusCode.NOT_FOUND, 400: grpc.StatusCode.FAILED_PRECONDITION}


def assert_error(exc: BaseException, mode: str, cls: type, code: int, http_status: int) -> None:
    """`exc` is the A2A error `cls` (JSON-RPC `code`, REST `http_status`).

    * JSON-RPC: the client maps error.code to the exception class, so the class
      pins the code.
    * REST 1.0: the client maps google.rpc.ErrorInfo.reason to the class; the
      HTTP status is on the httpx error it chains.
    * REST 0.3: a2a-sdk's CompatRestTransport only maps a body `{"type": ...}`
      to a class, and otherwise raises MethodNotFoundError for any 404 and
      A2AClientError for other statuses, so only the HTTP status is checked.
    """
    if mode.startswith('jsonrpc'):
        assert isinstance(exc, cls), repr(exc)
        assert JSON_RPC_ERROR_CODE_MAP[type(exc)] == code
        return
    if mode.startswith('grpc'):
        # The client maps the ErrorInfo reason to the class; the status code follows
        # the A2A table (HTTP 404 is NOT_FOUND, these 400s FAILED_PRECONDITION).
        assert isinstance(exc, cls), repr(exc)
        cause = exc.__cause__
        assert isinstance(cause, grpc.aio.AioRpcError), repr(exc)
        assert cause.code() == GRPC_CODE[http_status], cause.code()
        return
    assert isinstance(exc, A2AError), repr(exc)
    cause = exc.__cause__
    assert isinstance(cause, httpx.HTTPStatusError), repr(exc)
    if mode == 'rest-1.0':
        assert isinstance(exc, cls), repr(exc)
        assert cause.response.status_code == http_status
    else:
        assert cause.response.status_code in REST_03_STATUS[http_status], cause.response.status_code


async def test_get_unknown_task_is_task_not_found(http, mode):
    client = await make_client(http, 'echo', mode)
    with pytest.raises(Exception) as ei:
        await client.get_task(GetTaskRequest(id=f'no-such-task-{uuid.uuid4()}'))
    assert_error(ei.value, mode, TaskNotFoundError, -32001, 404)


async def test_message_to_completed_task_is_unsupported(http, mode):
    client = await make_client(http, 'echo', mode)
    done = await send(client, user_message(new_text()))
    assert state_name(done.status.state) == 'TASK_STATE_COMPLETED'
    with pytest.raises(Exception) as ei:
        await send(client, user_message('again', task_id=done.id, context_id=done.context_id))
    assert_error(ei.value, mode, UnsupportedOperationError, -32004, 400)
