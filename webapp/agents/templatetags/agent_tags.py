"""``{% load agent_tags %}{% agent_panel %}``: the agent panel of the editor (one line in
templates/histories/_editor.html), from the editor's context (session, viewed, editable)."""
from django import template

from webapp.agents.views import panel_context

register = template.Library()


@register.inclusion_tag("agents/_panel.html", takes_context=True)
def agent_panel(context, error=None):
    session = context.get("session")
    ctx = panel_context(session, context.get("viewed", 0), bool(context.get("editable")), error=error)
    ctx["csrf_token"] = context.get("csrf_token")
    ctx["request"] = context.get("request")
    return ctx
