"""The live Forgejo-family server tier: one real Gitea for the session, torn down after."""

from __future__ import annotations

from tests.support.gitea_fixtures import gitea, gitea_pusher, image, owner, skopeo
from tests.support.registry_recorder import session

__all__ = ["gitea", "gitea_pusher", "image", "owner", "session", "skopeo"]
