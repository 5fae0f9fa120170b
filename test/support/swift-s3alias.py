# tempauth for swift-s3.sh, plus access-key aliases without ':' ("s3_key_aliases = tester=test:tester"):
# Bun's S3Client presign() signs an access key containing ':' wrongly (oven-sh/bun#24422).
# swift-s3.sh copies this file to DIR/lib/s3alias.py, on the proxy's PYTHONPATH.
from swift.common.middleware import tempauth


def filter_factory(global_conf, **local_conf):
    make = tempauth.filter_factory(global_conf, **local_conf)
    aliases = [a.split('=', 1) for a in local_conf.get('s3_key_aliases', '').split()]

    def f(app):
        ta = make(app)
        for alias, real in aliases:
            ta.users[alias] = ta.users[real]
        return ta
    return f
