from tenants.access import is_program_manager, staff_role, visible_organizations


def access(request) -> dict:
    """Navigation needs to know whether the user is program staff and which orgs it may open."""
    user = request.user
    if not user.is_authenticated:
        return {}
    role = staff_role(user)
    return {
        "staff_role": role,
        "is_program_manager": is_program_manager(user),
        # Staff reach every org from the program page; the nav lists only a tenant's own.
        "nav_organizations": [] if role else list(visible_organizations(user).only("name", "slug")),
    }
