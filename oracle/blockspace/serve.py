"""The child side of grading a blockspace submission: loads its block manager class and serves the grader's
adapter calls (oracle/blockspace/adapter.py runs here, beside the submission; only its answers cross).

    /usr/bin/python3 -I -B serve.py REQUESTS_FD REPLIES_FD ROOT MODULE ATTR SUPPORT

SUPPORT holds a copy of oracle/serve.py and oracle/blockspace/adapter.py, nothing else of pagedcheck. Requests:
{"op": "new"} (a fresh adapter) and {"op": "call", "method": name, "args": [...]}; replies {"ret": value} or
{"failure": label, "fatal": bool} (oracle/serve.py).
"""

import sys

if __name__ == "__main__":  # pragma: no cover  (in the child: SUPPORT, argv[6], holds oracle/)
    sys.path.insert(0, sys.argv[6])

from oracle import serve  # noqa: E402 (standard library only)

METHODS = ("start", "arrive", "can_allocate", "allocate", "can_append_slots", "append_slots", "fork", "free",
           "can_swap_out", "can_swap_in", "swap", "recompute", "observe", "close")


class Server(serve.Server):
    def __init__(self, replies: int, adapter: type, manager: object, failure: type):
        super().__init__(replies)
        self.adapter_class, self.manager, self.labelled = adapter, manager, (failure,)
        self.adapter: object = None

    def handle(self, request: dict) -> dict:
        if request.get("op") == "new":
            self.adapter = self.adapter_class(self.manager)
            return {"ret": None}
        method, args = request.get("method"), request.get("args")
        if request.get("op") != "call" or method not in METHODS or self.adapter is None or type(args) is not list:
            raise serve.Fatal("the grader sent a request the server does not know")
        return {"ret": getattr(self.adapter, method)(*args)}


def main(argv: list[str]) -> None:  # pragma: no cover  (run by the system Python in the sandbox)
    requests, replies, root, module, attr = argv[1:6]
    server = Server(int(replies), object, None, Exception)
    server.watch_forks()

    def loading() -> None:
        from oracle.blockspace.adapter import Adapter, Failure

        manager = serve.load(root, module, attr or "BlockSpaceManager")
        if not isinstance(manager, type):
            raise serve.Fatal(f"{attr or 'BlockSpaceManager'} is not a class")
        server.adapter_class, server.manager, server.labelled = Adapter, manager, (Failure,)

    serve.run(server, int(requests), loading)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv)
