"""Form fields every app's forms share."""
from django import forms
from django.forms.fields import InvalidJSONInput


class SafeJSONField(forms.JSONField):
    """JSON text that Python's parser refuses with ValueError too (an integer of more than
    4,300 digits) is a form error, not a 500."""

    def to_python(self, value):
        try:
            return super().to_python(value)
        except ValueError:  # what json.loads raises past its digit limit
            raise forms.ValidationError("Enter valid JSON: a number in it is too long.",
                                        code="invalid") from None

    def bound_data(self, data, initial):  # the page shown again with the refused text
        try:
            return super().bound_data(data, initial)
        except ValueError:
            return InvalidJSONInput(data)
