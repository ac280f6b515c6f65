"""Request: a sequence of token ids and how many of them have been computed (the scheduler's count)."""


class Request:
    def __init__(self, request_id: str, prompt_token_ids: list[int]):
        self.request_id = request_id
        self.all_token_ids = list(prompt_token_ids)
        self.num_computed_tokens = 0

    @property
    def num_tokens(self) -> int:
        return len(self.all_token_ids)

    def append_output_token_ids(self, token_id: int) -> None:
        self.all_token_ids.append(token_id)
