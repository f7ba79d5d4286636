"""strobe's start-up hook for Python commands under `strobe run`.

`strobe run` puts this directory first on PYTHONPATH, so Python's site module
imports this file as `sitecustomize`. It does two things and nothing else:

1. watches for `import torch` (one entry on sys.meta_path that answers only
   for "torch"); once torch's own import has finished it installs strobe's
   PyTorch capture (strobe/_torch.py). A script that never imports torch
   never imports strobe either.
2. runs the sitecustomize this file shadows (the user's, or the
   distribution's), found further along sys.path, under the same name, so
   its behaviour, and its errors, are what they would be without strobe.

STROBE_FRAMEWORK=0 in the environment (strobe run --no-framework) turns 1 off.
"""


def _strobe_boot():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))

    def same_dir(p):
        try:
            return os.path.samefile(p or ".", here)
        except OSError:
            return False

    # our directory leaves sys.path: nothing else should find this file
    sys.path[:] = [p for p in sys.path if not same_dir(p)]

    class TorchWatcher:
        """Finds nothing itself; when torch is being imported, wraps the real
        loader so the capture is installed right after torch's __init__ ran."""

        def find_spec(self, name, path=None, target=None):
            if name != "torch":
                return None
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass
            import importlib.util

            spec = importlib.util.find_spec("torch")
            loader = getattr(spec, "loader", None)
            if loader is None or not hasattr(loader, "exec_module"):
                return spec
            real_exec = loader.exec_module

            def exec_module(module):
                try:
                    real_exec(module)
                except BaseException as e:
                    # torch's own error, with the traceback it has without
                    # strobe: this frame's line out (import.c then drops the
                    # importlib frames around it, as it does for any import)
                    tb = e.__traceback__
                    if tb is not None and tb.tb_frame is sys._getframe():
                        e.__traceback__ = tb.tb_next
                    raise
                try:
                    from strobe import _torch

                    _torch.install()
                except Exception as e:  # never break the import of torch
                    sys.stderr.write(f"strobe: PyTorch capture is off: {type(e).__name__}: {e}\n")

            loader.exec_module = exec_module
            return spec

    if os.environ.get("STROBE_FRAMEWORK", "1") != "0" and os.environ.get("STROBE_SHM"):
        if "torch" in sys.modules:  # imported by a .pth file before us
            try:
                from strobe import _torch

                _torch.install()
            except Exception as e:
                sys.stderr.write(f"strobe: PyTorch capture is off: {type(e).__name__}: {e}\n")
        else:
            sys.meta_path.insert(0, TorchWatcher())

    # the sitecustomize this one shadows, run as if Python had found it first;
    # through the import system's own frozen modules, which every interpreter
    # has loaded already: importlib.util would pull in contextlib and
    # collections, 5 ms of start-up for every Python command under strobe
    import _frozen_importlib
    import _frozen_importlib_external

    spec = _frozen_importlib_external.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is not None and spec.loader is not None:
        module = _frozen_importlib.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_strobe_boot()
del _strobe_boot
