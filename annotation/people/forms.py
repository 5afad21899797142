"""Forms of the people pages: they parse and validate; the services write."""
from django import forms
from django.contrib.auth import password_validation
from django.contrib.auth.validators import UnicodeUsernameValidator

from .services import ROLE_LABELS, ROLES

ROLE_CHOICES = [(role, ROLE_LABELS[role]) for role in ROLES]


class RolesForm(forms.Form):
    roles = forms.MultipleChoiceField(choices=ROLE_CHOICES, required=False,
                                      widget=forms.CheckboxSelectMultiple, label="Roles")


class UserCreateForm(RolesForm):
    username = forms.CharField(label="Username", max_length=150,
                               validators=[UnicodeUsernameValidator()])
    email = forms.EmailField(label="E-mail", required=False,
                             help_text="Needed for the password-reset e-mail.")
    password = forms.CharField(
        label="Password", required=False, strip=False, widget=forms.PasswordInput,
        help_text="Leave empty to let the user choose one through “Forgot your password?”.")

    field_order = ["username", "email", "password", "roles"]

    def clean(self):
        data = super().clean()
        if data.get("password"):
            try:
                password_validation.validate_password(data["password"])
            except forms.ValidationError as exc:
                self.add_error("password", exc)
        if not data.get("password") and not data.get("email"):
            self.add_error("email", "Give an e-mail or a password: without either the user "
                                    "could never sign in.")
        return data
