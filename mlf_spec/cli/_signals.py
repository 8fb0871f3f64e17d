"""The command line's signals: SIGINT, SIGTERM and SIGHUP become exceptions in the main
thread, so that writers clean up on the way out, and the run remembers which one came, so
that a signal a library swallowed (turned into another error, or caught) still stops it."""

from __future__ import annotations


class Signalled(BaseException):
    """Raised in the main thread by SIGTERM or SIGHUP, so that the writers' cleanup runs
    (temporary files removed, the old output untouched) as it does for SIGINT."""

    def __init__(self, signum: int) -> None:
        import signal

        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name


#: ``quiet`` is set once the run has stopped: a signal arriving then (while the last line is
#: printed, handlers are restored or the interpreter exits) is ignored, never a traceback.
_state: dict[str, int | None] = {"quiet": 0, "signal": None}


def _raise(signum: int, frame: object) -> None:
    if _state["quiet"]:
        return
    import signal

    _state["signal"] = signum
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Signalled(signum)


def received() -> int | None:
    """The number of the signal this run received, if any."""
    return _state["signal"]


def stop_if_received() -> None:
    """Raise the signal's exception again if one was received: a batch calls this between
    inputs, so that a signal swallowed inside one input's work still ends the run there."""
    signum = _state["signal"]
    if signum is not None and not _state["quiet"]:
        if signum == 2:
            raise KeyboardInterrupt
        raise Signalled(signum)


def quiet() -> None:
    """From here on a signal is ignored (the run is ending)."""
    _state["quiet"] = 1


def catch(saved: dict[int, object]) -> None:
    """SIGINT raises KeyboardInterrupt, SIGTERM and SIGHUP :class:`Signalled` from here on
    (where they were not ignored, and in the main thread only); the old handlers go into
    ``saved`` as each is replaced."""
    import signal

    _state["quiet"], _state["signal"] = 0, None
    for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None and signal.getsignal(sig) not in (signal.SIG_IGN, None):
            try:
                saved[sig] = signal.signal(sig, _raise)
            except ValueError:  # not the main thread: signals are not ours to catch
                break


def restore(saved: dict[int, object]) -> None:
    """Put back the handlers :func:`catch` replaced."""
    import signal

    for sig, old in saved.items():
        signal.signal(sig, old)  # type: ignore[arg-type]  # a handler getsignal returned
