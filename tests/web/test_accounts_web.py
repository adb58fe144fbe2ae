"""Accounts: Django's password validators on sign-up (each refusal says why), and API
tokens made with post/redirect/get (a reload never makes a second token; the secret is
shown once)."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from webapp.api.models import ApiToken

pytestmark = pytest.mark.django_db


def signup(client, username, password):
    return client.post("/accounts/signup/", {"username": username, "password1": password, "password2": password})


def test_signup_refuses_a_weak_password_with_the_reasons():
    r = signup(Client(), "gina", "123")
    assert r.status_code == 400
    html = r.content.decode()
    assert "This password is too short. It must contain at least 8 characters." in html
    assert "This password is entirely numeric." in html
    assert "This password is too common." in html
    assert get_user_model().objects.count() == 0


@pytest.mark.parametrize("password, reason", [
    ("password1", "This password is too common."),
    ("12345678901", "This password is entirely numeric."),
    ("hildegard-x", "The password is too similar to the username."),
])
def test_signup_names_the_validator_that_refused(password, reason):
    r = signup(Client(), "hildegard", password)
    assert r.status_code == 400 and reason in r.content.decode()
    assert not get_user_model().objects.filter(username="hildegard").exists()


def test_signup_page_lists_the_password_rules_and_a_good_password_passes():
    page = Client().get("/accounts/signup/").content.decode()
    assert "at least 8 characters" in page and "entirely numeric" in page
    c = Client()
    r = signup(c, "ivo", "quiet-harbour-42")
    assert r.status_code == 302 and get_user_model().objects.filter(username="ivo").exists()


def _account_client():
    get_user_model().objects.create_user("jo", password="jo-long-pass-77")
    c = Client()
    assert c.login(username="jo", password="jo-long-pass-77")
    return c


def test_token_creation_redirects_and_a_reload_makes_no_second_token():
    c = _account_client()
    r = c.post("/accounts/", {"note": "agent"})
    assert r.status_code == 302 and r["Location"] == "/accounts/"
    assert ApiToken.objects.count() == 1
    page = c.get("/accounts/").content.decode()
    shown = re.search(r'id="new-token">Your new token \(shown once\): <code>(pdk_[^<]+)</code>', page)
    assert shown and ApiToken.user_for(shown.group(1)).username == "jo"
    again = c.get("/accounts/").content.decode()                 # the reload
    assert 'id="new-token"' not in again and shown.group(1) not in again
    assert ApiToken.objects.count() == 1


def test_revoking_redirects_and_a_bad_token_id_changes_nothing():
    c = _account_client()
    c.post("/accounts/", {"note": "one"})
    token = ApiToken.objects.get()
    assert c.post("/accounts/", {"revoke": "not-a-number"}).status_code == 302
    assert c.post("/accounts/", {"revoke": "99999999999999999999999"}).status_code == 302
    assert ApiToken.objects.filter(revoked=False).count() == 1 and ApiToken.objects.count() == 1
    r = c.post("/accounts/", {"revoke": str(token.id)})
    assert r.status_code == 302 and r["Location"] == "/accounts/"
    assert ApiToken.objects.get().revoked
    assert "Token revoked." in c.get("/accounts/").content.decode()
