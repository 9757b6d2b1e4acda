// Waiting until the desktop's apps have caught up with what the X server
// sent them, instead of guessing how long that takes: a keymap change is read
// by each app in its own time, and one starved of CPU was seen to read its
// next keys before it (they came out as other keys: a text lost a run of
// characters and the rest landed in the wrong place). EWMH's _NET_WM_PING is
// answered from an app's event loop, so its answer comes once the app has
// handled every event sent before it; the ping is sent twice, so that what the
// app asked the server for while handling them (the keymap it re-reads) has
// come back before the second answer. Apps that do not answer pings (xterm:
// it reads a new keymap as it handles the notice) are not waited for.
//
// The program runs inside the branch with the desktop's python3 (the helper
// has no X client of its own). It prints how many windows answered.

/**
 * The start of both programs (Python 3, ctypes and libX11 only): the display
 * and its root window; argv[1] is the most the program waits, in seconds.
 */
export const OPEN_DISPLAY_PY = `
import ctypes, select, sys, time

TIMEOUT_S = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
x = ctypes.CDLL('libX11.so.6')
ulong, c_int, c_uint, vp = ctypes.c_ulong, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p
x.XOpenDisplay.restype = vp
x.XDefaultRootWindow.restype = ulong
x.XDefaultRootWindow.argtypes = [vp]
dpy = x.XOpenDisplay(None)
if not dpy:
    sys.exit('cannot open the display')
root = x.XDefaultRootWindow(dpy)
`;

/** Waits until the apps have answered two pings each, at most argv[1] seconds. */
export const X_CATCH_UP_PY = `${OPEN_DISPLAY_PY}

class ClientMessage(ctypes.Structure):
    _fields_ = [('type', c_int), ('serial', ulong), ('send_event', c_int), ('display', vp),
                ('window', ulong), ('message_type', ulong), ('format', c_int), ('data', ctypes.c_long * 5)]

class Event(ctypes.Union):
    _fields_ = [('type', c_int), ('client', ClientMessage), ('pad', ctypes.c_long * 24)]

x.XInternAtom.restype = ulong
x.XInternAtom.argtypes = [vp, ctypes.c_char_p, c_int]
x.XGetWindowProperty.argtypes = [vp, ulong, ulong, ctypes.c_long, ctypes.c_long, c_int, ulong,
                                 ctypes.POINTER(ulong), ctypes.POINTER(c_int), ctypes.POINTER(ulong),
                                 ctypes.POINTER(ulong), ctypes.POINTER(ctypes.POINTER(ulong))]
x.XSelectInput.argtypes = [vp, ulong, ctypes.c_long]
x.XSendEvent.argtypes = [vp, ulong, c_int, ctypes.c_long, ctypes.POINTER(Event)]
x.XPending.argtypes = [vp]
x.XNextEvent.argtypes = [vp, ctypes.POINTER(Event)]
x.XFlush.argtypes = [vp]
x.XConnectionNumber.argtypes = [vp]
x.XFree.argtypes = [vp]
x.XSetErrorHandler.argtypes = [vp]

# A window gone between listing and pinging is not an error worth dying for.
ERROR_HANDLER = ctypes.CFUNCTYPE(c_int, vp, vp)(lambda d, e: 0)
x.XSetErrorHandler(ctypes.cast(ERROR_HANDLER, vp))

atom = lambda name: x.XInternAtom(dpy, name.encode(), 0)
NET_CLIENT_LIST, WM_PROTOCOLS, NET_WM_PING = atom('_NET_CLIENT_LIST'), atom('WM_PROTOCOLS'), atom('_NET_WM_PING')

def windows_property(window, prop):
    kind, fmt, count, left = ulong(), c_int(), ulong(), ulong()
    data = ctypes.POINTER(ulong)()
    if x.XGetWindowProperty(dpy, window, prop, 0, 1024, 0, 0, ctypes.byref(kind), ctypes.byref(fmt),
                            ctypes.byref(count), ctypes.byref(left), ctypes.byref(data)) != 0 or not data:
        return []
    values = [data[i] for i in range(count.value)] if fmt.value == 32 else []
    x.XFree(data)
    return values

pingable = [w for w in windows_property(root, NET_CLIENT_LIST) if NET_WM_PING in windows_property(w, WM_PROTOCOLS)]
x.XSelectInput(dpy, root, 1 << 19)  # SubstructureNotifyMask: the answers go to the root window

def ping(n, round_):
    ev = Event()
    ev.client.type, ev.client.window, ev.client.message_type, ev.client.format = 33, pingable[n], WM_PROTOCOLS, 32
    ev.client.data[0], ev.client.data[1], ev.client.data[2] = NET_WM_PING, round_ * 1000 + n, pingable[n]
    x.XSendEvent(dpy, pingable[n], 0, 0, ctypes.byref(ev))

# Each window gets its second ping once it answered its first: one that does not answer holds up no other.
answered = [0] * len(pingable)
for n in range(len(pingable)):
    ping(n, 1)
x.XFlush(dpy)
deadline = time.monotonic() + TIMEOUT_S
while min(answered, default=2) < 2 and time.monotonic() < deadline:
    if not x.XPending(dpy):
        select.select([x.XConnectionNumber(dpy)], [], [], max(0.0, deadline - time.monotonic()))
        continue
    ev = Event()
    x.XNextEvent(dpy, ctypes.byref(ev))
    if ev.type != 33 or ev.client.message_type != WM_PROTOCOLS or ev.client.data[0] != NET_WM_PING:
        continue
    round_, n = divmod(ev.client.data[1], 1000)
    if n < len(pingable) and answered[n] == round_ - 1:
        answered[n] = round_
        if round_ == 1:
            ping(n, 2)
            x.XFlush(dpy)
late = [pingable[n] for n in range(len(pingable)) if answered[n] < 2]
print(f'{len(pingable) - len(late)} of {len(pingable)} windows caught up' + (f'; not in time: {sorted(late)}' if late else ''))
`;

/**
 * Waits, at most argv[1] seconds, until no client holds the pointer grabbed. The window manager (openbox) takes a
 * click on a window in a grab that freezes the pointer until it has focused
 * the window and let the click through, while keys go on to the window that
 * has the focus: keys sent right after a click could reach the app before the
 * click (seen: ctrl+a selected all, then the click placed the caret, and
 * BackSpace deleted one character). Our own grab succeeds only once no other
 * is held; it is let go at once. Prints how long it waited.
 */
export const X_POINTER_FREE_PY = `${OPEN_DISPLAY_PY}
x.XGrabPointer.argtypes = [vp, ulong, c_int, c_uint, c_int, c_int, ulong, ulong, ulong]
x.XUngrabPointer.argtypes = [vp, ulong]
x.XSync.argtypes = [vp, c_int]

started = time.monotonic()
GRAB_SUCCESS, GRAB_MODE_ASYNC, NONE, CURRENT_TIME = 0, 1, 0, 0
while True:
    status = x.XGrabPointer(dpy, root, 0, 0, GRAB_MODE_ASYNC, GRAB_MODE_ASYNC, NONE, NONE, CURRENT_TIME)
    if status == GRAB_SUCCESS:
        x.XUngrabPointer(dpy, CURRENT_TIME)
        x.XSync(dpy, 0)
        print(f'pointer free after {round((time.monotonic() - started) * 1000)} ms')
        break
    if time.monotonic() - started > TIMEOUT_S:
        print(f'pointer still grabbed after {TIMEOUT_S} s (status {status})')
        break
    time.sleep(0.01)
`;
