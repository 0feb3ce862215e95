"""Runs the Spring example's Bloom filter scripts through redis-py, as a Python service would.

The filter's name is KEYS[1] and the item KEYS[2]; the reply (1 or 0) is read as a boolean.
register_script sends EVALSHA and falls back to EVAL when the server does not know the script.

Usage: scripts.py PORT [PASSWORD [USER]]. Prints "ok" when every check passes.

An ACL user allowed only +eval +evalsha +bf.add +bf.exists may not run SCRIPT LOAD, which
register_script falls back to; for it the script runs as Spring's executor runs it: EVALSHA,
and EVAL when the server answers NOSCRIPT.
"""
import hashlib
import sys

import redis

ADD = "return redis.call('BF.ADD', KEYS[1], KEYS[2])"
EXISTS = "return redis.call('BF.EXISTS', KEYS[1], KEYS[2])"


def main():
    port = int(sys.argv[1])
    password = sys.argv[2] if len(sys.argv) > 2 else None
    user = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
    r = redis.Redis(host="127.0.0.1", port=port, username=user, password=password, socket_timeout=10)
    if user:
        def script(body):
            sha = hashlib.sha1(body.encode()).hexdigest()

            def call(keys):
                try:
                    return r.evalsha(sha, len(keys), *keys)
                except redis.exceptions.NoScriptError:
                    return r.eval(body, len(keys), *keys)
            call.sha = sha
            return call
        add, exists = script(ADD), script(EXISTS)
    else:
        add, exists = r.register_script(ADD), r.register_script(EXISTS)
    f = "py:filter"
    assert bool(add(keys=[f, "alice"])) is True
    assert bool(add(keys=[f, "alice"])) is False
    assert bool(exists(keys=[f, "alice"])) is True
    assert bool(exists(keys=[f, "mallory"])) is False
    assert r.eval(ADD, 2, f, "bob") == 1
    assert r.evalsha(exists.sha, 2, f, "bob") == 1
    try:
        r.evalsha("0" * 40, 0)
        raise AssertionError("EVALSHA of an unknown script succeeded")
    except redis.exceptions.NoScriptError:
        pass
    if user:
        try:
            r.eval("return redis.call('SET', KEYS[1], 'x')", 1, "k")
            raise AssertionError("SET from a script by a user without +set succeeded")
        except redis.ResponseError as e:
            assert str(e).startswith("The user executing the script can't run this command or subcommand"), str(e)
    print("ok")


if __name__ == "__main__":
    main()
