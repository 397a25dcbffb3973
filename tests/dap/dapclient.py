"""A minimal Debug Adapter Protocol client for the tests: Content-Length
framing over `ptdecode dap`'s stdin/stdout, with a timeout on every read so
that an adapter that hangs fails the test instead of blocking it."""
import json
import select
import subprocess


class Client:
    def __init__(self, exe, timeout=120):
        # unbuffered: select() then sees every byte not yet read
        self.p = subprocess.Popen([exe, 'dap'], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, bufsize=0)
        self.seq = 0
        self.timeout = timeout
        self.events = []

    def send_raw(self, data):
        self.p.stdin.write(b'Content-Length: %d\r\n\r\n' % len(data) + data)
        self.p.stdin.flush()

    def send(self, cmd, **args):
        self.seq += 1
        self.send_raw(json.dumps({'seq': self.seq, 'type': 'request',
                                  'command': cmd, 'arguments': args}).encode())
        return self.seq

    def _wait(self):
        r, _, _ = select.select([self.p.stdout], [], [], self.timeout)
        if not r:
            raise TimeoutError('ptdecode dap did not answer in %d s' % self.timeout)

    def _readline(self):
        line = b''
        while not line.endswith(b'\n'):
            self._wait()
            ch = self.p.stdout.read(1)
            if not ch:
                break
            line += ch
        return line

    def read(self):
        n = None
        while True:
            line = self._readline()
            if not line:
                raise EOFError('ptdecode dap closed its output')
            if line in (b'\r\n', b'\n'):
                break
            if line.lower().startswith(b'content-length:'):
                n = int(line.split(b':')[1])
        body = b''
        while n is not None and len(body) < n:
            self._wait()
            chunk = self.p.stdout.read(n - len(body))
            if not chunk:
                raise EOFError('ptdecode dap closed its output')
            body += chunk
        return json.loads(body)

    def request(self, cmd, **args):
        """The response to a request; events before it are kept."""
        q = self.send(cmd, **args)
        while True:
            m = self.read()
            if m['type'] == 'response' and m['request_seq'] == q:
                return m
            self.events.append(m)

    def wait_event(self, name):
        while True:
            for i, m in enumerate(self.events):
                if m.get('event') == name:
                    return self.events.pop(i)
            self.events.append(self.read())

    def close(self):
        try:
            self.request('disconnect')
        finally:
            self.p.stdin.close()
            self.p.wait(timeout=self.timeout)
        return self.p.returncode
