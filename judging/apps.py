from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judging"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import hits  # noqa: F401  registers the rating HIT types
        from .judges import jobs
        from .judges.kinds import load_kinds
        from .submissions.hooks import subscribe

        load_kinds()  # each module of judges/kinds/ registers its judge kinds
        jobs.register()  # judge runs count against the job caps
        subscribe()  # a submission follows its judge run's end
        from annotation.engine.study_budget import register_spender

        from .judges.selectors import study_judge_spend

        register_spender(study_judge_spend)  # judge runs spend their study's budget
