from annotation.core.permissions import user_roles


def roles(request):
    return {"roles": user_roles(request.user) if hasattr(request, "user") else set()}
