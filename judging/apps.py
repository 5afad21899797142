from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judging"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import hits  # noqa: F401  registers the rating HIT types
        from .judges import jobs

        jobs.register()  # judge runs count against the job caps
        from annotation.providers.study_budget import register_spender

        from .judges.selectors import study_judge_spend

        register_spender(study_judge_spend)  # judge runs spend their study's budget
