"""Drives bloomd with redis-py (Debian's python3-redis), as a Python service would.

Usage: client.py PORT [PASSWORD]. Exits 0 and prints "ok" when every check passes.
"""
import sys

import redis


def main():
    port = int(sys.argv[1])
    password = sys.argv[2] if len(sys.argv) > 2 else None
    r = redis.Redis(host="127.0.0.1", port=port, password=password, socket_timeout=10)
    assert r.ping() is True
    bf = r.bf()

    assert bf.create("emails", 0.01, 1000) is True
    assert bf.add("emails", "alice@example.com") == 1
    assert bf.add("emails", "alice@example.com") == 0
    assert bf.madd("emails", "bob@example.com", "carol@example.com", "alice@example.com") == [1, 1, 0]
    assert bf.exists("emails", "bob@example.com") == 1
    assert bf.exists("emails", "mallory@example.com") == 0
    assert bf.mexists("emails", "alice@example.com", "nobody") == [1, 0]
    assert r.execute_command("BF.CARD", "emails") == 3

    info = bf.info("emails")
    assert (info.capacity, info.size, info.filterNum, info.insertedNum, info.expansionRate) == (1000, 1480, 1, 3, 2), vars(info)

    assert bf.insert("daily", ["x", "y", "x"], capacity=10, error=0.001, expansion=3) == [1, 1, 0]
    try:
        bf.insert("absent", ["x"], noCreate=True)
        raise AssertionError("NOCREATE on a missing key succeeded")
    except redis.ResponseError as e:
        assert str(e) == "not found", str(e)
    try:
        bf.create("emails", 0.01, 1000)
        raise AssertionError("a second BF.RESERVE succeeded")
    except redis.ResponseError as e:
        assert str(e) == "item exists", str(e)

    # Dump and restore through SCANDUMP / LOADCHUNK, as RedisBloom's docs show.
    for i in range(200):
        bf.add("daily", "item-%d" % i)
    chunks = []
    it = 0
    while True:
        it, data = bf.scandump("daily", it)
        if it == 0:
            break
        chunks.append((it, data))
    for it, data in chunks:
        bf.loadchunk("daily-copy", it, data)
    for i in range(250):
        item = "item-%d" % i
        assert bf.exists("daily", item) == bf.exists("daily-copy", item), item
    assert r.execute_command("BF.CARD", "daily") == r.execute_command("BF.CARD", "daily-copy")

    # One filter per day, expiring.
    assert r.expire("daily", 3600) is True
    assert 3500 < r.ttl("daily") <= 3600
    assert r.type("daily") == b"MBbloom--"

    # A pipeline and a transaction.
    p = r.pipeline(transaction=False)
    for i in range(500):
        p.execute_command("BF.ADD", "piped", i)
    assert sum(p.execute()) >= 490
    t = r.pipeline(transaction=True)
    t.execute_command("BF.ADD", "tx", "a")
    t.execute_command("BF.EXISTS", "tx", "a")
    assert t.execute() == [1, 1]

    r.set("marker", "v")
    try:
        bf.add("marker", "x")
        raise AssertionError("BF.ADD on a string succeeded")
    except redis.ResponseError as e:
        assert str(e).startswith("WRONGTYPE"), str(e)
    assert sorted(r.scan_iter(match="daily*")) == [b"daily", b"daily-copy"]
    assert r.info("server")["redis_version"] == "7.0.15"
    assert r.delete("daily", "daily-copy", "nothing") == 2
    check_cf(r)
    print("ok")


def check_cf(r):
    """redis-py's cf() commands: cuckoo filters, which remove items on the server."""
    cf = r.cf()
    assert cf.create("coupons", 1000, bucket_size=4, max_iterations=10, expansion=2) is True
    assert cf.add("coupons", "c1") == 1
    assert cf.addnx("coupons", "c1") == 0
    assert cf.addnx("coupons", "c2") == 1
    assert cf.insert("coupons", ["c3", "c3"]) == [1, 1]
    assert cf.insertnx("fresh", ["a", "a", "b"], capacity=100) == [1, 0, 1]
    assert cf.count("coupons", "c3") == 2
    assert cf.exists("coupons", "c1") == 1
    assert cf.mexists("coupons", "c1", "nope") == [1, 0]
    assert cf.delete("coupons", "c1") == 1
    assert cf.exists("coupons", "c1") == 0
    try:
        cf.delete("absent", "x")
        raise AssertionError("CF.DEL on a missing key succeeded")
    except redis.ResponseError as e:
        assert str(e) == "Not found", str(e)
    info = cf.info("coupons")
    assert (info.size, info.bucketNum, info.filterNum, info.insertedNum, info.deletedNum,
            info.bucketSize, info.expansionRate, info.maxIteration) == (1080, 256, 1, 3, 1, 4, 2, 10), vars(info)
    for i in range(300):
        cf.add("coupons", "item-%d" % i)
    chunks = []
    it = 0
    while True:
        it, data = cf.scandump("coupons", it)
        if it == 0:
            break
        chunks.append((it, data))
    for it, data in chunks:
        cf.loadchunk("coupons-copy", it, data)
    for i in range(300):
        assert cf.exists("coupons-copy", "item-%d" % i) == 1
    assert r.execute_command("CF.DEBUG", "coupons") == r.execute_command("CF.DEBUG", "coupons-copy")
    assert r.type("coupons") == b"MBbloomCF"
    r.execute_command("CF.COMPACT", "coupons")


if __name__ == "__main__":
    main()
