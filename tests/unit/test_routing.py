"""The route table lookup: fixed paths and path templates find the handler the table's order
gives, and a known path with another method is refused with the allowed ones."""

from __future__ import annotations

import pytest

from berth.common.routing import MethodNotAllowed, NoRoute, Router

ROUTER = Router(
    {
        "/servers/{id}": {"GET": "show"},
        "/servers/detail": {"GET": "detail"},  # after the template: the template takes it
        "/flavors/detail": {"GET": "flavors detail"},
        "/flavors/{id}": {"GET": "flavor", "DELETE": "delete flavor"},
        "/v2.1": {"GET": "version"},
    }
)


@pytest.mark.parametrize(
    ("path", "found"),
    [
        ("/servers/detail", ("show", {"id": "detail"})),
        ("/servers/abc/", ("show", {"id": "abc"})),
        ("/flavors/detail", ("flavors detail", {})),
        ("/flavors/detail/", ("flavors detail", {})),
        ("/flavors/42", ("flavor", {"id": "42"})),
        ("/v2.1", ("version", {})),
    ],
)
def test_the_first_route_of_the_table_that_matches_answers(
    path: str, found: tuple[str, dict[str, str]]
) -> None:
    assert ROUTER.match("GET", path) == found


def test_another_method_on_a_known_path_is_refused_with_the_allowed_ones() -> None:
    with pytest.raises(MethodNotAllowed) as refused:
        ROUTER.match("POST", "/flavors/detail")
    assert refused.value.allowed == ["GET"]
    with pytest.raises(MethodNotAllowed) as refused:
        ROUTER.match("PUT", "/flavors/7")
    assert refused.value.allowed == ["GET", "DELETE"]


def test_an_unknown_path_has_no_route() -> None:
    with pytest.raises(NoRoute):
        ROUTER.match("GET", "/images")
