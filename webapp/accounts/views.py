"""The account pages.  Guarantees: signing up or in hands the anonymous sessions this
browser created to the user (``histories.services.adopt``); ``next`` is followed only
to a path on this site; the account page needs a signed-in user (else the login page);
sign-up checks the password with AUTH_PASSWORD_VALIDATORS and says why one is refused.

Token changes are post/redirect/get: a POST makes (or revokes) a token and redirects to
the account page, which shows a new token's secret once (kept in the browser session
until that page is shown), so reloading the page never makes a second token."""
from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import login as auth_login
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.views import LoginView
from django.http import HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.urls import reverse

from webapp.api.models import ApiToken
from webapp.histories import services
from webapp.histories.models import Session
from webapp.histories.services import OWNED_KEY

ACCOUNT_SESSIONS = 100
NEW_TOKEN_KEY = "dojo_new_api_token"     # browser-session slot of a token made, until shown


def _local(url: str) -> str:
    return url if url.startswith("/") and not url.startswith("//") else "/"


class DojoLoginView(LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = False

    def form_valid(self, form):
        owned = list(self.request.session.get(OWNED_KEY, []))
        response = super().form_valid(form)
        n = services.adopt(form.get_user(), owned)
        if n:
            messages.info(self.request, f"{n} session{'s' if n != 1 else ''} from this browser now belong to you.")
        return response


def signup(request):
    if request.method == "POST":
        form = UserCreationForm(request.POST)
        if form.is_valid():
            owned = list(request.session.get(OWNED_KEY, []))
            user = form.save()
            auth_login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            services.adopt(user, owned)
            messages.success(request, f"Welcome, {user.get_username()}.")
            return redirect(_local(request.POST.get("next") or "/"))
        return render(request, "registration/signup.html", {"form": form}, status=400)
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET", "POST"])
    return render(request, "registration/signup.html", {"form": UserCreationForm(),
                                                        "next": request.GET.get("next", "")})


def account(request):
    if not request.user.is_authenticated:
        return redirect(f"{reverse('login')}?{urlencode({'next': '/accounts/'})}")
    if request.method == "POST":
        if request.POST.get("revoke"):
            revoked = ApiToken.objects.filter(user=request.user, id=_token_id(request.POST["revoke"]),
                                              revoked=False).update(revoked=True)
            if revoked:
                messages.info(request, "Token revoked.")
        else:
            _tok, raw = ApiToken.issue(request.user, request.POST.get("note", "")[:100])
            request.session[NEW_TOKEN_KEY] = raw
        return redirect(reverse("account"))
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET", "POST"])
    return render(request, "registration/account.html", {
        "tokens": ApiToken.objects.filter(user=request.user, revoked=False),
        "new_token": request.session.pop(NEW_TOKEN_KEY, None),
        "sessions": Session.objects.filter(owner=request.user).order_by("-updated")[:ACCOUNT_SESSIONS]})


def _token_id(raw: str):
    """The token id of a revoke form; None (revokes nothing) when it is not an integer."""
    raw = raw.strip()
    return int(raw) if raw.isdigit() and len(raw) < 19 else None
