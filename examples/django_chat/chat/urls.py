from django.urls import path

from . import views

urlpatterns = [path("api/send/", views.send, name="send"), path("api/messages/", views.messages, name="messages")]
