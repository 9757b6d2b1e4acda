// What the helper asks the branch's X server directly, with the desktop's
// python3 and libX11 (the helper has no X client of its own; x-catch-up.ts):
// where the pointer is (the RFB session only knows where it put the pointer
// itself, not where it was before the session opened), and the windows the
// window manager lists. Both print one line; what they print comes from the
// branch, and the helper checks it like any other input.
import { OPEN_DISPLAY_PY } from './x-catch-up.js';

/** Prints "X Y": the pointer on the root window. */
export const X_POINTER_PY = `${OPEN_DISPLAY_PY}
x.XQueryPointer.argtypes = [vp, ulong, ctypes.POINTER(ulong), ctypes.POINTER(ulong)] + [ctypes.POINTER(c_int)] * 4 + [ctypes.POINTER(c_uint)]
root_return, child, rx, ry, wx, wy, mask = ulong(), ulong(), c_int(), c_int(), c_int(), c_int(), c_uint()
if not x.XQueryPointer(dpy, root, *(ctypes.byref(v) for v in (root_return, child, rx, ry, wx, wy, mask))):
    sys.exit('the pointer is on another screen')
print(rx.value, ry.value)
`;

/**
 * Prints a JSON array: per window of _NET_CLIENT_LIST (at most 256), its id,
 * title (_NET_WM_NAME, else WM_NAME), application class (WM_CLASS), pid
 * (_NET_WM_PID), position on the screen, size, and whether it is
 * _NET_ACTIVE_WINDOW.
 */
export const X_WINDOWS_PY = `${OPEN_DISPLAY_PY}
import json
x.XInternAtom.restype = ulong
x.XInternAtom.argtypes = [vp, ctypes.c_char_p, c_int]
x.XGetWindowProperty.argtypes = [vp, ulong, ulong, ctypes.c_long, ctypes.c_long, c_int, ulong,
                                 ctypes.POINTER(ulong), ctypes.POINTER(c_int), ctypes.POINTER(ulong),
                                 ctypes.POINTER(ulong), ctypes.POINTER(ctypes.POINTER(ctypes.c_ubyte))]
x.XTranslateCoordinates.argtypes = [vp, ulong, ulong, c_int, c_int, ctypes.POINTER(c_int), ctypes.POINTER(c_int), ctypes.POINTER(ulong)]
x.XGetGeometry.argtypes = [vp, ulong, ctypes.POINTER(ulong)] + [ctypes.POINTER(c_int)] * 2 + [ctypes.POINTER(c_uint)] * 4
x.XFree.argtypes = [vp]
x.XSetErrorHandler.argtypes = [vp]

# A window gone between listing and asking about it is left out, not fatal.
ERROR_HANDLER = ctypes.CFUNCTYPE(c_int, vp, vp)(lambda d, e: 0)
x.XSetErrorHandler(ctypes.cast(ERROR_HANDLER, vp))
atom = lambda name: x.XInternAtom(dpy, name.encode(), 0)
ITEM_BYTES = {8: 1, 16: ctypes.sizeof(ctypes.c_short), 32: ctypes.sizeof(ctypes.c_long)}

def prop(window, name):
    kind, fmt, count, left = ulong(), c_int(), ulong(), ulong()
    data = ctypes.POINTER(ctypes.c_ubyte)()
    if x.XGetWindowProperty(dpy, window, atom(name), 0, 4096, 0, 0, ctypes.byref(kind), ctypes.byref(fmt),
                            ctypes.byref(count), ctypes.byref(left), ctypes.byref(data)) != 0 or not data:
        return None, 0
    raw = ctypes.string_at(data, count.value * ITEM_BYTES.get(fmt.value, 1))
    x.XFree(data)
    return raw, fmt.value

def numbers(window, name):
    raw, fmt = prop(window, name)
    return list((ulong * (len(raw) // ctypes.sizeof(ulong))).from_buffer_copy(raw)) if fmt == 32 else []

def text(window, name):
    raw, fmt = prop(window, name)
    return raw.decode('utf-8', 'replace') if fmt == 8 else None

active = (numbers(root, '_NET_ACTIVE_WINDOW') or [0])[0]
windows = []
for w in numbers(root, '_NET_CLIENT_LIST')[:256]:
    parent, gx, gy, width, height, border, depth = ulong(), c_int(), c_int(), c_uint(), c_uint(), c_uint(), c_uint()
    if not x.XGetGeometry(dpy, w, *(ctypes.byref(v) for v in (parent, gx, gy, width, height, border, depth))):
        continue
    sx, sy, child = c_int(), c_int(), ulong()
    x.XTranslateCoordinates(dpy, w, root, 0, 0, ctypes.byref(sx), ctypes.byref(sy), ctypes.byref(child))
    app = (text(w, 'WM_CLASS') or '').split('\\0')
    pid = numbers(w, '_NET_WM_PID')
    windows.append({
        'id': hex(w), 'title': (text(w, '_NET_WM_NAME') or text(w, 'WM_NAME') or '')[:512],
        'app': (app[1] if len(app) > 1 else app[0])[:256], 'pid': pid[0] if pid and pid[0] > 0 else None,
        'x': sx.value, 'y': sy.value, 'width': width.value, 'height': height.value, 'focused': w == active,
    })
print(json.dumps(windows))
`;
