"""Accounts: sign up, sign in (adopting this browser's anonymous sessions), sign out, and
the account page with the user's sessions and API tokens."""
