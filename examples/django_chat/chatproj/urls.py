from django.urls import include, path

from chat import views

urlpatterns = [path("", views.index, name="index"), path("chat/", include("chat.urls"))]
