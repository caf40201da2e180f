"""Loading: cuDNN in a process, proven in a child first, and what it needs to run there.

Takes a judged `Install` (`cudnnload.judge`), judged as the process will hold its set (`plans`): probes
it in a child process (an ``abort()`` there is a verdict, not a crash), dlopens it here in dependency
order and runs every VersionCheck (`loader`), or preloads it into a program that then takes cudnnload's
place (`pin`, ``cudnnload run``); and wraps the C API (`capi`, `status`), the driver (`cudadriver`,
`gpu`), handles and cuDNN's log. Hands on a `Loaded` cuDNN and its API for `cudnnload.dispatch` to call.

(Named ``loading``, not ``load``: ``cudnnload.load`` is the public function that loads cuDNN.)
"""
