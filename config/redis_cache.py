"""Django's Redis cache, keeping one client object per connection pool.

Django's backend builds a new ``redis.Redis`` around the pool on every cache call; sessions
are read from this cache on every request, and under load that constructor alone was ~5 % of a
web worker's CPU. A client is a thin, thread-safe handle on its pool, so one per pool is kept
(the pool itself still resets its connections after a fork).
"""
from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class _ReusingClient(RedisCacheClient):
    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        clients = self.__dict__.setdefault("_clients", {})
        client = clients.get(id(pool))
        if client is None:
            client = clients[id(pool)] = self._client(connection_pool=pool)
        return client


class ReusingRedisCache(RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = _ReusingClient
