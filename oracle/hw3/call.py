"""One HW3 API call as a program made it, and its one text in C terms: `create_sequence(engine, 1, 4097)`,
`llm_init(NULL, 64)`. Every listing, message and stray note writes a call with `c_text`."""

from dataclasses import dataclass

POINTER_CALLS = {"llm_init": "an engine", "create_sequence": "a Sequence", "fork_sequence": "a Sequence"}


def c_text(api: str, args: tuple[int, ...], null: bool) -> str:
    """The call in C: the engine (for llm_init, the pool) first, NULL when `null`, then the ints."""
    first = ("NULL" if null else "pool") if api == "llm_init" else ("NULL" if null else "engine")
    return f"{api}({', '.join([first, *map(str, args)])})"


def returned_value(api: str, returned: object) -> bool | int:
    """What a call returned, as the model predicts it: whether a pointer-returning call gave a handle, else the int."""
    return returned is not None if api in POINTER_CALLS else returned  # type: ignore[return-value]


def shown(api: str, value: bool | int) -> str:
    """What a call returned, in words: a pointer-returning call's `an engine`/`a Sequence`/`NULL`, else the int."""
    if api in POINTER_CALLS:
        return POINTER_CALLS[api] if value else "NULL"
    return str(value)


@dataclass(frozen=True, slots=True)
class Call:
    """One API call as the machine made it, with the return value the model expected."""

    api: str
    args: tuple[int, ...]  # llm_init: (pool_size,)
    null: bool  # a NULL engine (for llm_init: a NULL pool)
    expected: bool | int  # NULL/NOT_NULL for pointer-returning calls, else the int
    judged: bool = True  # False: the model could not say (it had lost the ref counts); `expected` is what came

    def __str__(self) -> str:
        return c_text(self.api, self.args, self.null)
