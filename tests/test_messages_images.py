"""Images in tool results: kept by the store's codec, left alone by redaction."""

from __future__ import annotations

import json

from rawtrio.contracts import ToolStatus
from rawtrio.messages import ImagePart, ToolResult, message_from_json, message_to_json
from rawtrio.redaction import Redactor
from rawtrio.store.codec import message_from_row, message_to_row

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAIAAAUAAeIhvDMAAAAASUVORK5CYII="
RESULT = ToolResult(
    "toolu_1",
    "mcp__t__picture",
    ToolStatus.OK,
    "a red dot\n[image 1: image/png, 70 bytes]",
    started=True,
    images=(ImagePart("image/png", PNG), ImagePart("image/gif", "R0lGODlhAQABAAAAACw=")),
)


def test_a_result_with_images_round_trips_through_a_store_row() -> None:
    row = message_to_row(RESULT)
    assert json.loads(row)["images"][0] == {"media_type": "image/png", "data": PNG}
    assert message_from_row(row) == RESULT


def test_a_result_without_images_is_written_as_before() -> None:
    plain = ToolResult("toolu_1", "bash", ToolStatus.OK, "ok", started=True)
    assert "images" not in message_to_json(plain)
    assert message_from_json(message_to_json(plain)) == plain


def test_a_row_written_before_images_existed_still_loads() -> None:
    old_row = (
        '{"role":"tool","call_id":"toolu_1","name":"bash","status":"ok",'
        '"content":"a.txt","started":true}'
    )
    loaded = message_from_row(old_row)
    assert isinstance(loaded, ToolResult)
    assert (loaded.content, loaded.images) == ("a.txt", ())


def test_redaction_scrubs_the_text_and_leaves_image_data_alone() -> None:
    secret = PNG[:12]  # a "secret" that happens to occur in the base64
    result = ToolResult(
        "toolu_1",
        "t",
        ToolStatus.OK,
        f"token {secret}",
        images=(ImagePart("image/png", PNG),),
    )
    scrubbed = Redactor([secret]).scrub(result)
    assert scrubbed.content == "token [redacted]"
    assert scrubbed.images == (ImagePart("image/png", PNG),)
