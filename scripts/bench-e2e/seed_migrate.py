# The Python path of the source document on retry logic for cloud migration
# pipelines (rasterio + boto3 + tenacity), copied verbatim between the
# markers below; only the benchmark driver (bench_e2e.py) is ours. It is
# the anchor of the end-to-end figure in docs/benchmarks.md.
# --- verbatim from the source document ---
# tenacity>=8.2, boto3>=1.34, rasterio>=1.3, GDAL>=3.6
import hashlib
import logging
import os
from pathlib import Path

import boto3
import rasterio
from botocore.exceptions import BotoCoreError, ClientError
from rasterio.errors import RasterioIOError
from tenacity import (
    before_sleep_log,
    retry,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

logger = logging.getLogger("geo_migration.retry")

RETRYABLE = (ClientError, BotoCoreError, RasterioIOError, ConnectionError, TimeoutError)


class PermanentGeoError(Exception):
    """Non-retryable: invalid CRS, unsupported driver, corrupt source."""


def _source_hash(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _already_migrated(s3, bucket: str, key: str, src_hash: str) -> bool:
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
        return head.get("Metadata", {}).get("src_hash") == src_hash
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "404":
            return False
        raise


@retry(
    stop=stop_after_attempt(5),
    wait=wait_exponential(multiplier=2, min=4, max=60) + wait_random(0, 2),
    retry=retry_if_exception_type(RETRYABLE),
    before_sleep=before_sleep_log(logger, logging.WARNING),
    reraise=True,
)
def migrate_raster_to_cog(
    src_path: str,
    dest_bucket: str,
    dest_key: str,
    region: str = "us-east-1",
) -> dict:
    """Convert a local raster to COG and upload with idempotency tracking."""
    src_hash = _source_hash(src_path)
    s3 = boto3.client("s3", region_name=region)

    if _already_migrated(s3, dest_bucket, dest_key, src_hash):
        logger.info("Skipping %s — already migrated.", dest_key)
        return {"status": "skipped", "key": dest_key}

    tmp = f"/tmp/{Path(dest_key).name}"
    try:
        with rasterio.open(src_path) as src:
            if not src.crs or not src.crs.is_valid:
                raise PermanentGeoError(f"Invalid CRS in {src_path}")
            profile = {**src.profile, "driver": "COG", "compress": "deflate",
                       "tiled": True, "blockxsize": 256, "blockysize": 256}
            with rasterio.open(tmp, "w", **profile) as dst:
                dst.write(src.read())

        s3.upload_file(tmp, dest_bucket, dest_key,
                       ExtraArgs={"Metadata": {"src_hash": src_hash}})
        logger.info("Migrated %s → s3://%s/%s", src_path, dest_bucket, dest_key)
        return {"status": "success", "key": dest_key}

    except ClientError as exc:
        code = exc.response["Error"]["Code"]
        if code in ("AccessDenied", "InvalidParameter"):
            raise PermanentGeoError(f"Permanent S3 error {code}") from exc
        raise
    except RasterioIOError as exc:
        if "CRS" in str(exc) or "not recognized" in str(exc):
            raise PermanentGeoError(str(exc)) from exc
        raise
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
# --- end of the verbatim copy ---
