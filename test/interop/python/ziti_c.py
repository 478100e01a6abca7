"""
A thin ctypes binding to the event API of the C SDK that the `openziti` package ships (libziti.so).

The `openziti` Python API loads an identity through the C SDK's "zitilib" layer, which keeps the service list to
itself and refreshes it only every 60 seconds. To watch the C SDK's own service handling (the
`/current-api-session/service-updates` poll and the `/services` paging) this module drives the same library one
level lower: it creates a ziti context with `ziti_init_opts` on a private libuv loop, subscribes to context and
service events, and runs that loop in a background thread. Every C structure declared here follows the public
headers of the C SDK release the pinned `openziti` wheel carries (see requirements.txt).
"""
from __future__ import annotations

import ctypes
import json
import os
import threading
import time
from ctypes import (CFUNCTYPE, POINTER, Structure, Union, c_bool, c_char_p, c_int, c_long, c_size_t, c_uint,
                    c_void_p)
from typing import Callable

import openziti.zitilib as _zitilib

lib = _zitilib.ziti
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [c_void_p]

# ziti_event_type (ziti_events.h)
CONTEXT_EVENT = 1
ROUTER_EVENT = 1 << 1
SERVICE_EVENT = 1 << 2


class _ContextEvent(Structure):
    _fields_ = [("ctrl_status", c_int), ("err", c_char_p)]


class _ServiceEvent(Structure):
    # Each member is a NULL-terminated array of `ziti_service *`.
    _fields_ = [("removed", POINTER(c_void_p)), ("changed", POINTER(c_void_p)), ("added", POINTER(c_void_p))]


class _RouterEvent(Structure):
    _fields_ = [("status", c_int), ("name", c_char_p), ("address", c_char_p), ("version", c_char_p)]


class _EventUnion(Union):
    _fields_ = [("ctx", _ContextEvent), ("service", _ServiceEvent), ("router", _RouterEvent)]


class _Event(Structure):
    _fields_ = [("type", c_int), ("event", _EventUnion)]


_EVENT_CB = CFUNCTYPE(None, c_void_p, POINTER(_Event))
_ASYNC_CB = CFUNCTYPE(None, c_void_p)


class _Options(Structure):
    # ziti_options (ziti.h)
    _fields_ = [
        ("config", c_char_p),
        ("controller", c_char_p),
        ("tls", c_void_p),
        ("disabled", c_bool),
        ("config_types", POINTER(c_char_p)),
        ("api_page_size", c_uint),
        ("refresh_interval", c_long),
        ("metrics_type", c_int),
        ("router_keepalive", c_int),
        ("pq_mac_cb", c_void_p),
        ("pq_os_cb", c_void_p),
        ("pq_process_cb", c_void_p),
        ("pq_domain_cb", c_void_p),
        ("app_ctx", c_void_p),
        ("events", c_uint),
        ("event_cb", _EVENT_CB),
    ]


lib.uv_loop_new.restype = c_void_p
lib.uv_run.argtypes = [c_void_p, c_int]
lib.uv_run.restype = c_int
lib.uv_stop.argtypes = [c_void_p]
lib.uv_async_init.argtypes = [c_void_p, c_void_p, _ASYNC_CB]
lib.uv_async_init.restype = c_int
lib.uv_async_send.argtypes = [c_void_p]
lib.uv_async_send.restype = c_int
lib.ziti_init_opts.argtypes = [POINTER(_Options), c_void_p]
lib.ziti_init_opts.restype = c_int
lib.ziti_service_to_json.argtypes = [c_void_p, c_int, POINTER(c_size_t)]
lib.ziti_service_to_json.restype = c_void_p
lib.ziti_errorstr.argtypes = [c_int]
lib.ziti_errorstr.restype = c_char_p

_UV_ASYNC_SIZE = 512  # larger than uv_async_t on every supported platform


def _services_of(array) -> list[dict]:
    out = []
    if not array:
        return out
    i = 0
    while array[i]:
        size = c_size_t()
        raw = lib.ziti_service_to_json(array[i], 0, ctypes.byref(size))
        try:
            out.append(json.loads(ctypes.string_at(raw, size.value).decode()))
        finally:
            _libc.free(raw)
        i += 1
    return out


class ZitiContext:
    """A C SDK context on its own loop thread; records the events it receives."""

    def __init__(self, identity_file: str, refresh_interval: int = 1):
        self._cond = threading.Condition()
        self.services: dict[str, dict] = {}
        self.service_events: list[dict] = []
        self.context_events: list[tuple[int, str | None]] = []
        self._keep = []  # ctypes objects the C side points to
        self._loop = lib.uv_loop_new()
        self._async = ctypes.create_string_buffer(_UV_ASYNC_SIZE)
        stop_cb = _ASYNC_CB(lambda _handle: lib.uv_stop(self._loop))
        event_cb = _EVENT_CB(self._on_event)
        self._keep += [stop_cb, event_cb]
        if lib.uv_async_init(self._loop, self._async, stop_cb) != 0:
            raise RuntimeError("uv_async_init failed")
        config = ctypes.create_string_buffer(os.fsencode(identity_file))
        self._keep.append(config)
        self._opts = _Options(config=ctypes.cast(config, c_char_p), refresh_interval=refresh_interval,
                              events=CONTEXT_EVENT | SERVICE_EVENT, event_cb=event_cb)
        rc = lib.ziti_init_opts(ctypes.byref(self._opts), self._loop)
        if rc != 0:
            raise RuntimeError(f"ziti_init_opts failed: {lib.ziti_errorstr(rc).decode()}")
        self._thread = threading.Thread(target=lib.uv_run, args=(self._loop, 0), name="ziti-loop", daemon=True)
        self._thread.start()

    def _on_event(self, _ztx, event_p) -> None:
        event = event_p.contents
        with self._cond:
            if event.type == CONTEXT_EVENT:
                err = event.event.ctx.err
                self.context_events.append((event.event.ctx.ctrl_status, err.decode() if err else None))
            elif event.type == SERVICE_EVENT:
                ev = event.event.service
                record = {"added": _services_of(ev.added), "changed": _services_of(ev.changed),
                          "removed": _services_of(ev.removed)}
                self.service_events.append(record)
                for s in record["removed"]:
                    self.services.pop(s["name"], None)
                for s in record["added"] + record["changed"]:
                    self.services[s["name"]] = s
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[["ZitiContext"], bool], timeout: float) -> bool:
        """Waits until `predicate(self)` holds (checked after every event), at most `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def close(self) -> None:
        lib.uv_async_send(self._async)
        self._thread.join(timeout=10)
